// dpstudy-analyze: summaries, significance tests, power, learning curves,
// steps-to-result, plots and reports from study results (docs/analysis.md).
// The command line here; each command family in its own file (commands.hpp).
#include <boost/program_options.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <tuple>

#include "commands.hpp"
#include "dpstudy/error.hpp"
#include "dpstudy/file_io.hpp"
#include "dpstudy/option_errors.hpp"

namespace po = boost::program_options;
using namespace dpstudy;
using namespace dpstudy::analyze;

namespace {

const char* kUsage = R"(usage: dpstudy-analyze COMMAND STUDY_DIR... [options]

commands:
  runs             [--by K1,K2] [--metric M]: one row per run: id, status, the run keys that tell the runs
                   apart (or the --by keys), the metric; --format csv for a spreadsheet
  summary          --by K1,K2 [--metric M]: n, mean, sd, sem, 95 % t interval, median, min, max per group;
                   of a time to a goal also the Kaplan-Meier median, which counts the runs that never reached it
  compare          --factor K [--within K1,K2] [--baseline LEVEL] [--metric M] [--equivalence MARGIN [--alpha A]]:
                   ANOVA, Welch ANOVA, Kruskal-Wallis; Welch t, Mann-Whitney U, paired t and Wilcoxon (by seed
                   and search trial), Holm, Hedges' g; with a margin, whether each difference is shown to lie
                   within it (TOST)
  anova            --factors K1,K2 [--within K] [--metric M]: factorial ANOVA (Type II): main effects and
                   interactions (does K1's effect depend on K2?), F, p, partial eta squared
  power            --factor K [--within ...] [--baseline L] [--effect D] [--equivalence MARGIN]: detectable
                   effect, seeds needed to detect D or to show equivalence within the margin; of a time to a
                   goal also the log-rank test's detectable hazard ratio, by Schoenfeld and simulated for the
                   design [--hazard_ratio H: runs needed for H]
  curves           [--by K] [--series S] [--x step|epoch|samples|time_s] [--interval I]: mean curves with bands
  steps-to-result  --target T [--by batch_size] [--series S] [--throughput F]: first evaluated step reaching T
                   (--by global_batch: workers x batch_size, with workers swept)
  throughput       [--where K=V]: each point of --mode throughput's table (the folder's throughput.h5): samples/s,
                   steps/s, communication, memory, speed-up and efficiency over one worker
  report           --by K1,K2 [--factor F] [--target T] [--hazard_ratio H] --output FOLDER: report.md with the
                   summary, the factorial ANOVA, the comparisons of F and their power, steps and time to T, the
                   figures, each with its command
  plot             --kind summary|curves|steps|best_lr --output FILE.png|svg|gp (and the options of that command);
                   --kind reach --target T [--by K] [--x step|time_s]: the fraction of runs at T (Kaplan-Meier);
                   --kind scaling [--by K]: samples/s against workers from throughput tables, with linear scaling
  check-stats      (no study folder): this build's statistics on fixed data against scipy's and statsmodels'
                   values; exit status 1 if any differs by more than a relative 1e-6

An option the command does not read is refused (say, --output with summary).

metrics: any numeric index column (final_test_accuracy, best_test_accuracy, wall_time_s, ...), an
eval series at a point: test_accuracy@epoch=1, test_loss@step=200, or the mean of its last K
evaluations: test_accuracy@last=5, or of the last K evaluations of the model every worker held
(eval_at_sync): test_accuracy@synced_last=2. Diverged runs are counted and
excluded unless --include_diverged.
)";

}  // namespace

namespace {

// The options a user names, each into `o` or the lists' raw text.
po::options_description named_options(Options& o, std::string& by, std::string& within, std::string& factors) {
  po::options_description named("options");
  named.add_options()("help,h", "show usage")("by", po::value(&by), "grouping keys, comma-separated")(
      "metric", po::value(&o.metric)->default_value(o.metric), "metric to analyse")(
      "where", po::value(&o.where)->composing(),
      "keep runs with KEY=VALUE, or KEY!=VALUE, KEY<VALUE, <=, >, >= (repeatable)")(
      "factor", po::value(&o.factor), "compare / power: the factor whose levels are compared")(
      "within", po::value(&within), "compare / power / anova: one family of tests per combination of these keys")(
      "factors", po::value(&factors), "anova: the factors, comma-separated (2 to 4)")(
      "baseline", po::value(&o.baseline), "compare / power: compare every level with this one only")(
      "equivalence", po::value(&o.equivalence),
      "compare: also test each pair for equivalence within +/- this margin, in the metric's units (two one-sided "
      "Welch tests; 0.01 = one point of accuracy); power: the seeds per group that would show it")(
      "include_diverged", po::bool_switch(&o.include_diverged), "keep diverged, beaten and failed runs")(
      "log_x", po::bool_switch(&o.log_x), "plot --kind summary: a logarithmic x axis (the key's values must be > 0)")(
      "format", po::value(&o.format)->default_value(o.format), "table, markdown, csv, json or latex (booktabs)")(
      "effect", po::value(&o.effect), "power: seeds needed to detect this standardised effect d")(
      "hazard_ratio", po::value(&o.hazard_ratio),
      "power (and report) of a time to a goal: runs per group for the log-rank test to detect this hazard "
      "ratio, e.g. 2")(
      "alpha", po::value(&o.alpha)->default_value(0.05, "0.05"),
      "compare, report: the equivalence test's level (its interval is 1 - 2 alpha); power: the tests' level")(
      "power", po::value(&o.power)->default_value(0.8, "0.8"), "power: required power")(
      "series", po::value(&o.series)->default_value(o.series),
      "curves, steps-to-result, report, plot curves|reach|steps|best_lr: eval series")(
      "x", po::value(&o.x)->default_value(o.x),
      "curves: step, epoch, samples or time_s; plot --kind reach: step or time_s")(
      "target", po::value(&o.target),
      "steps-to-result, report, plot reach|steps|best_lr: the goal value of the series")(
      "throughput", po::value(&o.throughput),
      "steps-to-result: a throughput.h5 of --mode throughput; adds steps/s and the estimated time to result")(
      "kind", po::value(&o.kind)->default_value(o.kind), "plot: summary, curves, reach, steps, best_lr or scaling")(
      "interval", po::value(&o.interval)->default_value(o.interval),
      "curves, plot summary|curves|reach: what the bars and bands show: ci95 (95 % t interval of the mean), sd "
      "(+/- 1 standard deviation), sem, range (min to max) or none; plot reach: ci95 adds the Kaplan-Meier "
      "estimate's 95 % band")("style", po::value(&o.style)->default_value(o.style),
                              "plot --kind summary: bars (error bars) or band (shaded)")(
      "output", po::value(&o.output),
      "plot: the PNG or SVG file to write, or .gp: gnuplot's script for it; report: the folder");
  return named;
}

// Values out of range, and options that need each other, refused before any result is read.
void check_values(Options& o, const po::variables_map& vm, const std::string& by, const std::string& within,
                  const std::string& factors) {
  if (vm.count("effect") && !(o.effect > 0 && std::isfinite(o.effect))) {
    throw ConfigError("effect", num(o.effect), "must be a standardised effect d > 0, e.g. 0.5");
  }
  if (vm.count("hazard_ratio")) {
    if (!(o.hazard_ratio > 0 && std::isfinite(o.hazard_ratio)) || o.hazard_ratio == 1) {
      throw ConfigError("hazard_ratio", num(o.hazard_ratio),
                        "must be a hazard ratio > 0 other than 1, e.g. 2 (one level reaching the goal twice as fast)");
    }
    if (o.command == "report") {
      // The report's power of --factor's comparisons takes it where their metric is a time to a goal.
      if (o.factor.empty() || (std::isnan(o.target) && !is_goal_metric(o.metric))) {
        throw UsageError(
            "--hazard_ratio: report uses it in the power of the comparisons of --factor of a time to "
            "a goal: give --factor F and --target T (or --metric steps_to_goal, time_to_goal_s, "
            "SERIES@reach=T or SERIES@reach_time=T)");
      }
    } else if (!is_goal_metric(o.metric)) {
      throw UsageError("--hazard_ratio: the log-rank test is of a time to a goal, not of " + o.metric +
                       ": give --metric steps_to_goal, time_to_goal_s, SERIES@reach=T or SERIES@reach_time=T");
    }
  }
  if (vm.count("equivalence") && !(o.equivalence > 0 && std::isfinite(o.equivalence))) {
    throw ConfigError("equivalence", std::isnan(o.equivalence) ? "nan" : num(o.equivalence),
                      "must be a margin > 0 in the metric's units, e.g. 0.01 (one point of accuracy)");
  }
  if ((o.command == "compare" || o.command == "report") && vm.count("alpha") && !vm["alpha"].defaulted() &&
      !vm.count("equivalence")) {
    throw ConfigError("alpha", num(o.alpha),
                      "sets the level of the equivalence test in " + o.command +
                          ": give --equivalence MARGIN too (its "
                          "other tests show p-values with marks at 0.05, 0.01, 0.001)");
  }
  if (!(o.alpha > 0 && o.alpha < 0.5)) throw ConfigError("alpha", num(o.alpha), "must be in (0, 0.5), e.g. 0.05");
  if (!(o.power > 0 && o.power < 1)) throw ConfigError("power", num(o.power), "must be in (0, 1)");
  o.by = split_list(by);
  o.within = split_list(within);
  o.factors = split_list(factors);
  // A key twice in a list, or both compared and held fixed, is a slip: each group would be one level.
  for (const auto& [option, list, text] : {std::tuple{"by", &o.by, by}, std::tuple{"factors", &o.factors, factors},
                                           std::tuple{"within", &o.within, within}}) {
    for (std::size_t i = 0; i < list->size(); ++i) {
      if (std::find(list->begin(), list->begin() + std::ptrdiff_t(i), (*list)[i]) !=
          list->begin() + std::ptrdiff_t(i)) {
        throw ConfigError(option, text, "names '" + (*list)[i] + "' twice");
      }
    }
  }
  for (const std::string& k : o.within) {
    if (k == o.factor || std::find(o.factors.begin(), o.factors.end(), k) != o.factors.end()) {
      throw ConfigError("within", within, "names '" + k + "', which is also compared: a family holds one level of it");
    }
  }
}

// A command over the runs of the study folders (every command but throughput and plot --kind scaling).
int run_on_studies(Options& o, Format format) {
  Runs r = load_studies(o.dirs);
  const auto warn = [&r] {
    for (const std::string& w : r.warnings) std::fprintf(stderr, "dpstudy-analyze: warning: %s\n", w.c_str());
  };
  if (r.runs.empty()) {
    warn();
    throw UsageError("no finished run to analyse in " + join(o.dirs, ", "));
  }
  apply_where(r, o.where);
  std::vector<std::string> grouped_by = o.by;
  for (const auto* keys : {&o.within, &o.factors}) grouped_by.insert(grouped_by.end(), keys->begin(), keys->end());
  grouped_by.push_back(o.factor);
  warn_of_data_digests(r, grouped_by);
  warn_of_stacks(r, grouped_by);
  const bool times =
      o.command == "steps-to-result" || o.metric.find("time") != std::string::npos || o.metric == "samples_per_s";
  warn_of_shared_times(r, grouped_by, times);
  warn_of_copies(r, grouped_by);
  warn_of_assignment_schemes(r);
  warn();
  // A factor of one level (a key the study did not sweep, or --where kept one) compares nothing.
  if ((o.command == "compare" || o.command == "power") && !o.factor.empty()) require_levels(r, {o.factor}, "--factor");
  if (o.command == "anova" && o.factors.size() >= 2) require_levels(r, o.factors, "--factors");
  if (reads_option(o.command, o.kind, "metric")) require_goal(r, o.metric);
  if (o.command == "summary") {
    print(summary(r, o), format);
  } else if (o.command == "compare") {
    print(compare(r, o), format);
  } else if (o.command == "runs") {
    print(runs(r, o), format);
  } else if (o.command == "report") {
    report(r, o);
  } else if (o.command == "anova") {
    print(anova(r, o), format);
  } else if (o.command == "power") {
    print(power(r, o), format);
  } else if (o.command == "curves") {
    print(curves(r, o), format);
  } else if (o.command == "steps-to-result") {
    print(steps_to_result(r, o), format);
  } else {
    if ((o.kind == "steps" || o.kind == "best_lr") && o.by.empty()) o.by = {"batch_size"};
    plot(r, o);
  }
  return 0;
}

}  // namespace

static int analyze_main(int argc, char** argv) {
  try {
    Options o;
    std::string by, within, factors;
    po::options_description named = named_options(o, by, within, factors);
    po::options_description hidden;
    hidden.add_options()("command", po::value(&o.command))("dirs", po::value(&o.dirs));
    po::positional_options_description pos;
    pos.add("command", 1).add("dirs", -1);
    po::options_description all;
    all.add(named).add(hidden);
    po::variables_map vm;
    const po::parsed_options parsed = po::command_line_parser(argc, argv).options(all).positional(pos).run();
    store_options(parsed, vm);
    po::notify(vm);
    if (vm.count("help") || o.command.empty()) {
      std::cout << kUsage << "\n" << named;
      return o.command.empty() && !vm.count("help") ? 2 : 0;
    }
    const std::vector<std::string> commands = {"runs",   "summary", "compare",         "anova",
                                               "power",  "curves",  "steps-to-result", "throughput",
                                               "report", "plot",    "check-stats"};
    if (std::find(commands.begin(), commands.end(), o.command) == commands.end()) {
      throw UsageError("unknown command '" + o.command + "'; the commands: " + join(commands, ", "));
    }
    if (o.command == "plot" && !reads_option("plot", o.kind, "kind")) {  // every kind reads --kind
      throw ConfigError("kind", o.kind, "is not one of: " + join(plot_kinds(), ", "));
    }
    // An option the command would ignore is a slip (summary --output f.png wrote no file): refused.
    for (const po::option& opt : parsed.options) {
      if (opt.string_key == "command" || opt.string_key == "dirs") continue;
      o.typed.emplace_back(opt.string_key, opt.value);
      if (!reads_option(o.command, o.kind, opt.string_key)) {
        const std::string what = o.command == "plot" ? "plot --kind " + o.kind : o.command;
        throw UsageError("--" + opt.string_key + (opt.value.empty() ? "" : " " + join(opt.value, " ")) + ": " + what +
                         " does not read it; it applies to " + commands_reading(opt.string_key));
      }
    }
    check_values(o, vm, by, within, factors);
    const Format format = parse_format(o.format);
    interval_named(o.interval);  // both refused before the results are read
    if (o.style != "bars" && o.style != "band") throw ConfigError("style", o.style, "is not one of: bars, band");
    if (o.command == "steps-to-result" && o.by.empty()) o.by = {"batch_size"};
    if (o.command == "check-stats") {  // no results: fixed data and reference values
      if (!o.dirs.empty()) throw UsageError("check-stats reads no study folder (given: " + join(o.dirs, ", ") + ")");
      const CheckedStats checked = check_stats();
      print(checked.tables, format);
      return checked.failed == 0 ? 0 : 1;
    }
    if (o.command == "throughput") {  // the tables of --mode throughput, not the runs' index
      if (o.dirs.empty()) throw UsageError("give at least one study folder of --mode throughput (e.g. results/speed)");
      print(throughput(o), format);
      return 0;
    }
    if (o.command == "plot" && o.kind == "scaling") {  // from throughput tables too
      if (o.dirs.empty()) throw UsageError("give at least one study folder of --mode throughput (e.g. results/speed)");
      for (const std::string& note : plot_scaling(o)) std::printf("# %s\n", note.c_str());
      return 0;
    }
    return run_on_studies(o, format);
  } catch (const po::error& e) {
    std::fprintf(stderr, "dpstudy-analyze: error: %s\n", e.what());
    return 2;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "dpstudy-analyze: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dpstudy-analyze: error: %s\n", e.what());
    return 1;
  }
}

int main(int argc, char** argv) { return stdout_exit_status("dpstudy-analyze", analyze_main(argc, argv)); }
