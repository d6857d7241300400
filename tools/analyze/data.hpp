// dpstudy-analyze's view of results: the runs of one or more study folders
// (index plus run files, through the HDF5 layer), filtered and grouped.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "dpstudy/stats.hpp"

namespace dpstudy::analyze {

struct Run {
  std::map<std::string, double> numbers;     // numeric index columns
  std::map<std::string, std::string> texts;  // text index columns
  std::string file;                          // its run file
  bool completed() const { return status_is("completed"); }
  // A search trial that ended where another had reached the study's goal
  // (search_stop = beaten): its series are the first steps of the whole run's.
  bool beaten() const { return status_is("beaten"); }
  bool status_is(const char* status) const;
  // The value as text (numbers in their shortest exact form), or nullopt.
  std::optional<std::string> text(const std::string& key) const;
};

struct Runs {
  std::vector<Run> runs;
  std::vector<std::string> columns;        // every index column seen
  std::map<std::string, std::string> units;  // column -> units attribute
  std::set<std::string> config_keys;       // the run keys among them (a run file's /config)
  // What the index and runs/ disagree on (run files it does not list, rows without a file):
  // shown before the output, since the runs read are the index's.
  std::vector<std::string> warnings;
};

// Loads every study folder; UsageError for a folder that is not a study. Adds the column
// global_batch (workers x batch_size, dpstudy/study.hpp's kGlobalBatch) to the index's.
Runs load_studies(const std::vector<std::string>& dirs);
// Adds a warning for each dataset whose runs (those kept) were trained on different copies
// of its files (the index's data_digest): they differ in their data as well as in their keys.
// None when the output is grouped by data_digest (one of `grouped_by`).
void warn_of_data_digests(Runs& r, const std::vector<std::string>& grouped_by);
// Adds a warning when a group of the output (the runs kept with one value of each of
// `grouped_by`) mixes runs of more than one LibTorch, BLAS or dpstudy build (the index's
// libtorch, blas_build and dpstudy_build): samples of one question, not of one set of bits.
void warn_of_stacks(Runs& r, const std::vector<std::string>& grouped_by);
// Adds a warning when `times` (the output shows times) and the runs kept were trained
// with different numbers of runs at once in their process (the index's runs_at_once):
// their times measured different shares of the device. None when grouped by it.
void warn_of_shared_times(Runs& r, const std::vector<std::string>& grouped_by, bool times);
// Adds a warning when a group of the output holds one run (one run id) from several folders
// read: a study copied, or made on two machines, read as one, where each copy would count as
// a sample of its own. None when the groups keep the folders apart (study_dir in `grouped_by`).
void warn_of_copies(Runs& r, const std::vector<std::string>& grouped_by);
// "libtorch", "blas_build" and "dpstudy_build" where they take several values among the runs.
std::vector<std::string> varying_stack_keys(const Runs& r);

// Keeps the runs matching every "key=value" (numbers compare as numbers).
void apply_where(Runs& r, const std::vector<std::string>& where);

// Checks that every key is a column; UsageError listing the columns otherwise.
void require_columns(const Runs& r, const std::vector<std::string>& keys, const char* what);
// Checks that every key takes two or more values among the runs (a factor of
// one level has nothing to compare); UsageError naming the one value otherwise.
void require_levels(const Runs& r, const std::vector<std::string>& keys, const char* what);
// Values in order: numbers as numbers, other text as text.
bool value_less(const std::string& a, const std::string& b);
// The run keys that take several values among the runs, in column order.
std::vector<std::string> varying_run_keys(const Runs& r);
// A note when run keys other than `held` (and the seeds) take several values
// among the completed runs of one group (one combination of the held keys'
// values): its statistics then pool runs of different configs (another swept
// key, an earlier invocation's). Empty when none does.
std::string pooled_note(const Runs& r, const std::vector<std::string>& held);

// A metric: a numeric index column, or SERIES@step=N / SERIES@epoch=E read from
// each run's /eval series. NaN where a run has no value. UsageError listing the
// metrics that exist when it names none.
std::vector<double> metric_values(const Runs& r, const std::vector<const Run*>& runs, const std::string& metric);
std::string metric_unit(const Runs& r, const std::string& metric);
// Times to a goal: steps_to_goal and time_to_goal_s (the goal set in training, goal_error),
// or one given now, SERIES@reach=T (the first evaluated step at which the series reaches T:
// >= T, <= T for a loss) and SERIES@reach_time=T (the run's clock then, train time_s). NaN
// where a run never reached it (its files hold -1 and 0 for the recorded ones: a time to a
// goal not reached is unknown, not 0). require_goal: a UsageError when no completed run set
// a recorded goal; goal_note: how many completed runs never reached it (empty when none, or
// another metric).
bool is_goal_metric(const std::string& metric);
// A time to a goal in steps (steps_to_goal, SERIES@reach=T): reached at an evaluation, so
// runs reaching it at one evaluation tie; the times in seconds do not.
bool goal_in_steps(const std::string& metric);
void require_goal(const Runs& r, const std::string& metric);
std::string goal_note(const Runs& r, const std::string& metric);
// The runs' times to the goal for the log-rank test: a run that reached it is an event then,
// one that never did is censored at its end (its steps, or its wall_time_s for the times).
stats::Censored censored_times(const Runs& r, const std::vector<const Run*>& runs, const std::string& metric);
// The values a quantity of this unit can take: [0, 1] for a fraction, [0, inf)
// for times, rates, counts, sizes, losses and norms, else (-inf, inf). Plots cut
// their bands there; a t interval of few seeds can reach past them.
struct Range {
  double lo, hi;
};
Range natural_range(const std::string& unit);

// The runs a group's statistics see.
enum class Counted {
  completed,  // the completed runs
  to_goal,    // and the beaten ones: a time to a goal, censored where the search stopped them
  every,      // every run: diverged and failed ones too (--include_diverged)
};
// A statistic of `metric`'s: a time to a goal also counts the beaten runs. A
// trial is beaten where another trial had already reached the goal, whatever
// it would have done, so its end censors its time to the goal without bias;
// leaving it out would make the search look faster (docs/analysis.md#times-to-a-goal).
Counted counted_for(const std::string& metric, bool include_diverged);

struct Group {
  std::vector<std::string> key_values;  // one per grouping key
  std::vector<const Run*> runs;         // the runs counted (Counted)
  int not_completed = 0;                // diverged, beaten or failed runs
};
// Groups by `keys` (sorted numerically where the values are numbers).
std::vector<Group> group_runs(const Runs& r, const std::vector<std::string>& keys, Counted counted);
// The runs with each shared run listed under every cell it stands for: a run
// whose key of `keys` is inert (inert_keys: one worker's sync_period) takes, in
// one copy each, every value of that key that the other runs take
// (docs/studies.md#shared-runs). Each copy's text column "shared" is "1".
// For summaries and plots only: tests that treat runs as independent samples
// read the runs as they are, so that a shared run counts once. `copies` (if
// given) is set to the number of copies added.
Runs with_shared_cells(const Runs& r, const std::vector<std::string>& keys, std::size_t* copies = nullptr);
// Adds a warning when runs of assignment scheme 1 (a coarse pool drawn from the start
// of the order, before the scheme was recorded) are among the runs read, and
// their shards differ from scheme 2's (coarse, pool, overlap > 0, several shard owners).
void warn_of_assignment_schemes(Runs& r);

std::string format_number(double v);
// The finite values of v (NaN and infinities dropped), in order.
std::vector<double> finite(std::vector<double> v);
std::vector<std::string> split_list(const std::string& text);

// The run's wall clock when it finished training step `step` (1-based), from its train
// series time_s `t` (the evaluations before that step included); Error for a step it lacks.
double time_at_step(const Run& run, const std::vector<double>& t, double step);
// One run's eval series (or train series when `train` is set), by name.
std::vector<double> series(const Run& run, const std::string& name, bool train = false);

}  // namespace dpstudy::analyze
