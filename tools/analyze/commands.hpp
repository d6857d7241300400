// dpstudy-analyze's commands and what they share: the options as parsed, the
// helpers that format numbers and intervals, and the curves and steps-to-result
// that the plots and the report reuse. One file per command family.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "data.hpp"
#include "output.hpp"

namespace dpstudy {
namespace stats {
struct Describe;
}

namespace analyze {

struct Options {
  std::string command, metric = "final_test_accuracy", factor, baseline, format = "table", series = "test_accuracy",
                       x = "step", output, kind = "summary", throughput, interval = "ci95", style = "bars";
  std::vector<std::string> dirs, where, by, within, factors;
  bool include_diverged = false, log_x = false;
  double effect = 0, hazard_ratio = 0, target = std::nan(""), alpha = 0.05, power = 0.8;
  double equivalence = 0;  // compare, report, power: the equivalence margin, metric units (0: none)
  // The options as typed, in order, each with its words (none for a switch): the report shows under
  // each of its parts those that part read.
  std::vector<std::pair<std::string, std::vector<std::string>>> typed;
};

// options.cpp
// Whether `command` (plot: with --kind `kind`) reads option `name`; every command reads --where.
bool reads_option(const std::string& command, const std::string& kind, const std::string& name);
// "compare, power, report", for the message refusing the option elsewhere.
std::string commands_reading(const std::string& name);
// The word as it is where the shell passes it on unchanged, else in single quotes.
std::string shell_word(const std::string& s);
// " --name value ..." for each typed option that `command` reads, but those in `skip`, quoted for a shell.
std::string typed_options(const Options& o, const std::string& command, const std::string& kind,
                          const std::vector<std::string>& skip);

std::string num(double v, int digits = 4);
std::string join(const std::vector<std::string>& items, const std::string& separator);
std::string pval(double p);
std::string with_unit(const std::string& name, const std::string& unit);
// "k1=v1 k2=v2", "all" without keys.
std::string label(const std::vector<std::string>& keys, const std::vector<std::string>& values);
// The names of a plot's lines, one per group: its label less the keys that are
// inert in every run of it (local_sgd_from_epoch where sync_period = 1), but
// where that would give two lines one name or leave a line none.
std::vector<std::string> line_names(const std::vector<std::string>& keys, const std::vector<Group>& lines);

// What the bars and bands of curves and plots show around the mean (--interval).
struct Interval {
  const char* name;
  const char* low_header;
  const char* high_header;
  const char* title;  // completes "mean and ..."
};
// ConfigError for a name that is none of ci95, sd, sem, range, none.
const Interval& interval_named(const std::string& name);
// The interval's ends; the mean itself where it is undefined (n = 1 has no sd).
std::pair<double, double> interval_ends(const stats::Describe& d, const std::string& name);
// "mean and 95 % confidence interval", or "mean" alone with --interval none.
std::string mean_and(const Options& o);
Runs subset(const Runs& all, const std::vector<const Run*>& runs);

// runs.cpp
std::vector<Table> runs(const Runs& r, const Options& o);

// tests.cpp
std::vector<Table> summary(const Runs& r, const Options& o);
std::vector<Table> anova(const Runs& r, const Options& o);

// compare.cpp
std::vector<Table> compare(const Runs& r, const Options& o);
// ConfigError for a --baseline that is no level of --factor (a typo, not a missing level).
void check_baseline(const Runs& r, const Options& o);
// Two levels of a factor, by their positions.
struct LevelPair {
  std::size_t a, b;
};
// The pairs a family compares: the baseline against every other level, or
// every pair without one (a note in `notes` when the family lacks the baseline).
std::vector<LevelPair> level_pairs(const std::vector<Group>& levels, const std::string& baseline,
                                   std::vector<std::string>& notes, const std::string& family);

// power.cpp
std::vector<Table> power(const Runs& r, const Options& o);

// curves.cpp; Reach and what follows to the critical batch size: steps.cpp
struct Curve {
  std::vector<std::string> key_values;
  std::vector<const Run*> runs;
  std::vector<double> x, mean, lo, hi;
  std::vector<std::int64_t> n;
};
std::vector<Curve> curves_of(const Runs& r, const Options& o);
std::vector<Table> curves(const Runs& r, const Options& o);

struct Reach {
  std::vector<std::string> key_values;
  std::int64_t trials = 0, reached = 0;
  double best = std::nan(""), median = std::nan("");
  double best_lr = std::nan("");  // the learning rate of the best trial
  // Measured: each reaching trial's wall clock when it finished that step (train time_s).
  double fastest_s = std::nan(""), median_s = std::nan("");
  // The most steps a completed trial that missed the target trained: its epochs,
  // or its max_steps. NaN where none missed.
  double missed_after = std::nan("");
};
// A --target given, and within (0, 1] for an accuracy series; a UsageError otherwise.
void check_target(const Options& o);
std::vector<Reach> reach_of(const Runs& r, const Options& o);
// batch_size, global_batch and workers (at a fixed batch_size): the keys that scale the
// global batch, against which perfect scaling and the learning-rate rules are drawn.
bool scales_the_batch(const std::string& key);
// plot --kind steps and best_lr: the first --by key one of those; a UsageError otherwise.
void require_batch_key(const Options& o);
// The groups of reach_of against the batch (the first --by key) as lines, one per
// combination of the other --by keys ("sparsity=0.9"; "" for one key), in order of
// first appearance, each line's groups in batch order.
struct ReachLine {
  std::string name;
  std::vector<const Reach*> points;
};
std::vector<ReachLine> reach_lines(const std::vector<Reach>& reach, const std::vector<std::string>& by);
// The trials of a group are meant to differ in their metaparameters only (learning
// rate, momentum, ...: the best is taken over them); a note when other run keys
// (sparsity, workers, ...) vary within a group too. Empty when none does.
std::string trials_pooled_note(const Runs& r, const std::vector<std::string>& by);
// What a metaparameter search varies (docs/studies.md#metaparameter-search), and a swept
// rate's other spelling: lr, batch_lr_ratio, momentum, lr_end_factor, weight_decay, lr_decay_steps.
const std::vector<std::string>& metaparameter_keys();
// The regime of the step from one batch size to the next (docs/analysis.md).
std::string regime(double x0, double s0, double x1, double s1);
std::vector<Table> steps_to_result(const Runs& r, const Options& o);

// speed.cpp: throughput mode's table (<study>/throughput.h5, docs/performance.md), every
// column as text to compare with index values, with the index's derived global_batch.
struct Speed {
  std::vector<std::string> benchmark;
  std::map<std::string, std::vector<std::string>> columns;
  std::vector<double> steps_per_s;
  std::vector<std::string> run_type, aggregate;
  // What the figures were measured with, from the table's /provenance: "2 process(es) x 1
  // thread(s) on vm; LibTorch 1.13.0; OpenBLAS ...; dpstudy 0.1.0, commit ..." ("" if not recorded).
  std::string measured_with;
};
Speed read_speed(const std::string& path);
// One table's points: all of them (`points`, the baselines that --where may leave out) and those
// --where keeps (`rows`), as row numbers of `s`; `keys`: the columns that name a sweep point.
struct SpeedPoints {
  std::string path;
  Speed s;
  std::vector<std::string> keys;
  std::vector<std::size_t> points, rows;
  bool means = false;  // each point is the mean of its repetitions (Google Benchmark's aggregate)
  std::map<std::string, std::size_t> stddev_rows;  // benchmark name -> its row, of the stddev aggregates
  double number(const std::string& column, std::size_t i) const;  // NaN where there is no such column
  double spread(std::size_t i) const;  // samples/s's standard deviation over repetitions; NaN without them
  // How a point ran, not what it trained (workers, procs, parallel, global_batch).
  static bool is_how(const std::string& key);
};
// The table of a study folder of --mode throughput, or the file itself.
SpeedPoints speed_points(const std::string& dir_or_file, const std::vector<std::string>& where);
// Each point of the tables of the study folders (or files) given, with its speed-up over
// the point of one worker.
std::vector<Table> throughput(const Options& o);

// check-stats: this build's statistics on fixed data against scipy's and
// statsmodels' values for the same data (check_stats.cpp); failed counts the
// values outside the tolerance.
struct CheckedStats {
  std::vector<Table> tables;
  std::size_t failed = 0;
};
CheckedStats check_stats();

// A gnuplot title expression: the text, and under it the --where filters, so a figure that
// shows a slice of a study says which.
std::string plot_title(const std::string& text, const Options& o);
// Keys of two or more grouping keys ("sync_period=32 local_sgd_from_epoch=10") beside the
// graph would squeeze it to half the width: such keys go below it ("set key below").
std::string key_placement(std::size_t longest_title);

// plot.cpp, scaling.cpp, report.cpp: files written to --output. plot returns a note for
// under the figure (bands cut at the metric's range), or "".
std::string plot(const Runs& r, const Options& o);
// plot --kind scaling: samples/s against workers from throughput tables (not the runs' index);
// returns the notes for under the figure (which batch each table's lines hold, the dashed lines).
std::vector<std::string> plot_scaling(const Options& o);
// The study folders of `dirs` that hold a throughput table (<study>/throughput.h5) too.
std::vector<std::string> with_speed_table(const std::vector<std::string>& dirs);
// plot --kind steps: steps to the target against the batch, log2-log2, with perfect scaling and
// each step's regime; --kind best_lr: the best trial's rate, with the linear and square-root rules.
// Each writes its data blocks to `data` and its gnuplot lines to `script` (plot_steps.cpp).
void plot_steps(const Runs& r, const Options& o, std::ostringstream& data, std::ostringstream& script);
void plot_best_lr(const Runs& r, const Options& o, std::ostringstream& data, std::ostringstream& script);
// The kinds of plot, in the order the help lists them.
const std::vector<std::string>& plot_kinds();
void report(const Runs& r, const Options& o);

}  // namespace analyze
}  // namespace dpstudy
