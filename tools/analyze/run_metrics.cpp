// A run's metrics as the commands name them (summary values, SERIES@last=K,
// SERIES@step=N, SERIES@reach=T, ...), their units and ranges, its series read
// from its run file, and the goal: reached or censored, and what a table notes of it.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <optional>
#include <set>

#include "data.hpp"
#include "dpstudy/error.hpp"
#include "dpstudy/hdf5.hpp"
#include "dpstudy/metrics.hpp"
#include "dpstudy/study.hpp"

namespace fs = std::filesystem;

namespace dpstudy::analyze {

namespace {

// SERIES@reach=T (the first evaluated step at which the series reaches T) or
// SERIES@reach_time=T (the run's clock then, train time_s).
struct ReachMetric {
  std::string series;
  double target = 0;
  bool seconds = false;
};

std::optional<ReachMetric> reach_metric(const std::string& metric) {
  const auto at = metric.find('@');
  if (at == std::string::npos) return std::nullopt;
  ReachMetric m;
  std::string rest;
  if (metric.compare(at + 1, 6, "reach=") == 0) {
    rest = metric.substr(at + 7);
  } else if (metric.compare(at + 1, 11, "reach_time=") == 0) {
    rest = metric.substr(at + 12);
    m.seconds = true;
  } else {
    return std::nullopt;
  }
  m.series = metric.substr(0, at);
  char* end = nullptr;
  m.target = std::strtod(rest.c_str(), &end);
  if (rest.empty() || *end != '\0' || !std::isfinite(m.target)) {
    throw UsageError("metric '" + metric + "': '" + rest + "' is not a target value of " + m.series);
  }
  if (m.series.find("accuracy") != std::string::npos && !(m.target > 0 && m.target <= 1)) {
    throw UsageError("metric '" + metric + "': the target must be in (0, 1]: " + m.series +
                     " is a fraction (0.9 for 90 %)");
  }
  return m;
}

// A run file records steps_to_goal -1 and time_to_goal_s 0 when the run never reached its goal.
bool reached_goal(const Run& run) {
  const auto s = run.numbers.find("steps_to_goal");
  return s == run.numbers.end() || s->second >= 0;
}

bool set_goal(const Run& run) {
  const auto e = run.numbers.find("goal_error");
  return e == run.numbers.end() || e->second > 0;
}

std::vector<const Run*> completed_runs(const Runs& r) {
  std::vector<const Run*> out;
  for (const Run& run : r.runs) {
    if (run.completed()) out.push_back(&run);
  }
  return out;
}

}  // namespace

bool is_goal_metric(const std::string& metric) {
  return metric == "steps_to_goal" || metric == "time_to_goal_s" || reach_metric(metric).has_value();
}

bool goal_in_steps(const std::string& metric) {
  const auto reach = reach_metric(metric);
  return metric == "steps_to_goal" || (reach && !reach->seconds);
}

Counted counted_for(const std::string& metric, bool include_diverged) {
  if (include_diverged) return Counted::every;
  return is_goal_metric(metric) ? Counted::to_goal : Counted::completed;
}

stats::Censored censored_times(const Runs& r, const std::vector<const Run*>& runs, const std::string& metric) {
  const bool seconds = !goal_in_steps(metric);
  const std::vector<double> values = metric_values(r, runs, metric);
  stats::Censored c;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const bool reached = !std::isnan(values[i]);
    double time = values[i];
    if (!reached) {
      const auto end = runs[i]->numbers.find(seconds ? "wall_time_s" : "steps");
      if (end == runs[i]->numbers.end()) continue;
      time = end->second;
    }
    if (!std::isfinite(time)) continue;
    c.time.push_back(time);
    c.event.push_back(reached);
  }
  return c;
}

void require_goal(const Runs& r, const std::string& metric) {
  if (metric != "steps_to_goal" && metric != "time_to_goal_s") return;
  const std::vector<const Run*> completed = completed_runs(r);
  if (completed.empty() ||
      std::any_of(completed.begin(), completed.end(), [](const Run* run) { return set_goal(*run); })) {
    return;  // none completed: told per group
  }
  throw UsageError("metric '" + metric + "': none of the " + std::to_string(completed.size()) +
                   " completed runs set a goal (goal_error is 0 in each): train with goal_error E (docs/engine.md), "
                   "or give the goal now: SERIES@reach=T (steps) or SERIES@reach_time=T (seconds), e.g. "
                   "test_accuracy@reach=0.9");
}

std::string goal_note(const Runs& r, const std::string& metric) {
  if (!is_goal_metric(metric)) return "";
  const std::vector<const Run*> completed = completed_runs(r);
  const std::vector<double> values = metric_values(r, completed, metric);
  const auto missed = std::count_if(values.begin(), values.end(), [](double v) { return std::isnan(v); });
  if (missed == 0) return "";
  const bool recorded = !reach_metric(metric);
  return metric + ": " + std::to_string(missed) + " of the " + std::to_string(completed.size()) +
         " completed runs never reached the goal and are left out" +
         (recorded ? " (their files hold -1 and 0: not a step or a time)" : "") +
         ", so these are the statistics of the runs that reached it, and a setting that reaches it less often can "
         "look faster; compare's log-rank test counts them, and steps-to-result --target gives the fraction that "
         "reached a target";
}

std::vector<double> finite(std::vector<double> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return !std::isfinite(x); }), v.end());
  return v;
}

namespace {

// Series `name` of the run file's group `g` (eval or train, named `what`). Every
// column of a group has one value per row of its step column; a file where one
// does not (damaged, or edited by hand) is refused rather than read past.
std::vector<double> series_in(const h5::Group& g, const std::string& name, const char* what, const std::string& file) {
  if (!g.has(name)) {
    std::string all;
    for (const auto& m : g.members()) all += (all.empty() ? "" : ", ") + m;
    throw UsageError(std::string(what) + " series '" + name + "' does not exist; series: " + all);
  }
  const std::string column = std::string(what) + "/" + name;
  const std::vector<std::int64_t> shape = g.dataset_shape(name);
  const std::vector<std::int64_t> steps = g.has("step") ? g.dataset_shape("step") : std::vector<std::int64_t>{};
  if (steps.size() != 1 || shape != steps) {
    throw Error(file + ": " + column + " has " + h5::shape_text(shape) + " values, " + what + "/step " +
                (steps.empty() ? "is missing" : "has " + h5::shape_text(steps)) +
                ": expected one value per step (a damaged or edited run file)");
  }
  if (g.dataset_kind(name) == 's') throw Error(file + ": " + column + " holds text, expected numbers");
  return g.read_doubles(name);
}

}  // namespace

double time_at_step(const Run& run, const std::vector<double>& t, double step) {
  if (!(step >= 1 && step <= double(t.size()))) {
    throw Error(run.file + ": eval/step " + format_number(step) + " is not a training step (1 to " +
                std::to_string(t.size()) + "; a damaged or edited run file)");
  }
  return t[std::size_t(step) - 1];
}

std::vector<double> series(const Run& run, const std::string& name, bool train) {
  const h5::File f = h5::File::open_read(run.file);
  const char* what = train ? "train" : "eval";
  return series_in(f.root().open_group(what), name, what, run.file);
}

namespace {

// SERIES@last=K, SERIES@synced_last=K: the mean of each run's last K evaluations.
std::vector<double> mean_of_last(const std::vector<const Run*>& runs, const std::string& metric,
                                 const std::string& name, const std::string& axis, const std::string& count,
                                 double where) {
  std::vector<double> out;
  // The mean of the last K evaluations (those with a value): a final figure
  // less sensitive to where in an oscillation the run ended. synced_last:
  // only evaluations of the model every worker held (eval/synced, eval_at_sync).
  if (where < 1 || where != std::floor(where)) {
    throw UsageError("metric '" + metric + "': '" + count + "' is not a count of evaluations >= 1");
  }
  for (const Run* run : runs) {
    const h5::File f = h5::File::open_read(run->file);  // once per run: a study may have thousands
    const h5::Group eval = f.root().open_group("eval");
    std::vector<double> y = series_in(eval, name, "eval", run->file);
    if (axis == "synced_last") {
      if (!eval.has("synced")) {
        throw UsageError("metric '" + metric + "': run " + run->texts.at("run_id") +
                         " has no eval/synced series (made by a dpstudy before eval_at_sync)");
      }
      const std::vector<double> synced = series_in(eval, "synced", "eval", run->file);
      std::vector<double> kept;
      for (std::size_t i = 0; i < y.size() && i < synced.size(); ++i) {
        if (synced[i] != 0) kept.push_back(y[i]);
      }
      y = std::move(kept);
    }
    y = finite(std::move(y));
    const std::size_t k = std::min(y.size(), std::size_t(where));
    double sum = 0;
    for (std::size_t i = y.size() - k; i < y.size(); ++i) sum += y[i];
    out.push_back(k == 0 ? std::nan("") : sum / double(k));
  }
  return out;
}

// SERIES@step=N, SERIES@epoch=E: each run's value at that evaluation.
std::vector<double> value_at(const std::vector<const Run*>& runs, const std::string& metric, const std::string& name,
                             const std::string& axis, double where) {
  std::vector<double> out;
  for (const Run* run : runs) {
    const std::vector<double> x = series(*run, axis);
    const std::vector<double> y = series(*run, name);
    double v = std::nan("");
    bool evaluated = false;
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (std::fabs(x[i] - where) < 1e-9) {
        v = y[i];
        evaluated = true;
      }
    }
    if (std::isnan(v)) {
      const std::string spot = axis + " " + format_number(where);
      if (evaluated) {
        const bool none = std::none_of(y.begin(), y.end(), [](double e) { return std::isfinite(e); });
        std::string why = none ? " at any evaluation" : " at " + spot;
        if (none && name.rfind("val_", 0) == 0) why += " (it was trained without a validation split)";
        if (!none && name.rfind("test_", 0) == 0) why += " (the evaluation there skipped the test split: --test_every)";
        throw UsageError("metric '" + metric + "': run " + run->texts.at("run_id") + " has no value of " + name + why);
      }
      std::string points;  // where it was evaluated, to pick from: the first few and the last
      for (std::size_t i = 0; i < x.size(); ++i) {
        if (i == 4 && x.size() > 6) {
          points += ", ...";
          i = x.size() - 2;
        }
        points += (points.empty() ? "" : ", ") + format_number(x[i]);
      }
      throw UsageError("metric '" + metric + "': run " + run->texts.at("run_id") + " has no evaluation at " + spot +
                       (points.empty() ? " (it has none)" : " (its evaluations are at " + axis + " " + points + ")"));
    }
    out.push_back(v);
  }
  return out;
}

}  // namespace

std::vector<double> metric_values(const Runs& r, const std::vector<const Run*>& runs, const std::string& metric) {
  std::vector<double> out;
  const auto at = metric.find('@');
  if (at == std::string::npos) {
    if (std::find(r.columns.begin(), r.columns.end(), metric) == r.columns.end() ||
        (!runs.empty() && !runs.front()->numbers.count(metric))) {
      std::string all;
      std::vector<std::string> numeric;
      for (const auto& c : r.columns) {
        if (!r.runs.empty() && r.runs.front().numbers.count(c)) {
          all += (all.empty() ? "" : ", ") + c;
          numeric.push_back(c);
        }
      }
      const std::string near = did_you_mean(metric, numeric, "'", "'");
      throw UsageError("metric '" + metric + "' does not exist" + near +
                       (near.empty() ? "; numeric columns: " : " Numeric columns: ") + all +
                       "; or a series at a point, e.g. test_accuracy@epoch=1");
    }
    const bool goal = is_goal_metric(metric);
    for (const Run* run : runs) out.push_back(goal && !reached_goal(*run) ? std::nan("") : run->numbers.at(metric));
    return out;
  }
  if (const auto reach = reach_metric(metric)) {
    const bool lower_is_better = reach->series.find("loss") != std::string::npos;
    for (const Run* run : runs) {
      const h5::File f = h5::File::open_read(run->file);
      const h5::Group eval = f.root().open_group("eval");
      const std::vector<double> y = series_in(eval, reach->series, "eval", run->file);
      const std::vector<double> s = series_in(eval, "step", "eval", run->file);
      const std::int64_t first =
          first_reaching(std::vector<std::int64_t>(s.begin(), s.end()), y, reach->target, lower_is_better);
      if (first < 0) {
        out.push_back(std::nan(""));
      } else if (!reach->seconds) {
        out.push_back(double(first));
      } else {
        out.push_back(
            time_at_step(*run, series_in(f.root().open_group("train"), "time_s", "train", run->file), double(first)));
      }
    }
    return out;
  }
  const std::string name = metric.substr(0, at), point = metric.substr(at + 1);
  const auto eq = point.find('=');
  const std::string axis = eq == std::string::npos ? "" : point.substr(0, eq);
  const bool last = axis == "last" || axis == "synced_last";
  if (axis != "step" && axis != "epoch" && !last) {
    throw UsageError("metric '" + metric +
                     "': expected SERIES@step=N, SERIES@epoch=E, SERIES@last=K, SERIES@synced_last=K, "
                     "SERIES@reach=T or SERIES@reach_time=T");
  }
  char* end = nullptr;
  const double where = std::strtod(point.c_str() + eq + 1, &end);
  if (end == point.c_str() + eq + 1 || *end != '\0' || !std::isfinite(where)) {
    throw UsageError("metric '" + metric + "': '" + point.substr(eq + 1) + "' is not a number of " +
                     (last ? std::string("evaluations") : axis + "s"));
  }
  if (last) return mean_of_last(runs, metric, name, axis, point.substr(eq + 1), where);
  return value_at(runs, metric, name, axis, where);
}

std::string metric_unit(const Runs& r, const std::string& metric) {
  // The units attributes the suite wrote: the index's columns, else the series
  // in the first run file that has it. "1" (dimensionless) prints as no unit.
  if (const auto reach = reach_metric(metric)) return reach->seconds ? "s" : "step";
  const std::string base = metric.substr(0, metric.find('@'));
  std::string unit;
  if (auto it = r.units.find(base); it != r.units.end()) {
    unit = it->second;
  } else {
    for (const Run& run : r.runs) {
      std::error_code ec;
      if (!fs::exists(run.file, ec)) continue;
      const h5::File f = h5::File::open_read(run.file);
      for (const char* group : {"eval", "train"}) {
        const h5::Group g = f.root().open_group(group);
        if (g.has(base)) {
          unit = g.dataset_units(base);
          break;
        }
      }
      break;
    }
  }
  return unit == "1" ? "" : unit;
}

Range natural_range(const std::string& unit) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  if (unit == "fraction") return {0, 1};
  static const std::set<std::string> non_negative = {"s",     "samples/s", "steps/s", "step",    "samples", "epoch",
                                                     "count", "MiB",       "bytes",   "bytes/s", "nats",    "L2 norm"};
  if (non_negative.count(unit)) return {0, inf};
  return {-inf, inf};
}

}  // namespace dpstudy::analyze
