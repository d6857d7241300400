// dpstudy-analyze steps-to-result: the first step reaching a target per batch
// size, the regimes of scaling and the critical batch size (docs/analysis.md).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "commands.hpp"
#include "dpstudy/error.hpp"
#include "dpstudy/stats.hpp"
#include "dpstudy/study.hpp"

namespace dpstudy::analyze {

// The regime of the step from one batch size to the next (docs/analysis.md):
// e = log(speed-up in steps) / log(batch ratio), 1 for perfect scaling.
std::string regime(double x0, double s0, double x1, double s1) {
  if (std::isnan(s0) || std::isnan(s1) || !(x1 > x0)) return "-";
  const double e = std::log(s0 / s1) / std::log(x1 / x0);
  if (e >= 0.8) return "perfect scaling";
  if (e <= 0.1) return "maximal data parallelism";
  return "diminishing returns";
}

namespace {

// B_crit's 95 % interval: how far the points' scatter about the fitted curve leaves it open.
std::string critical_interval_note(const stats::CriticalBatch& cb) {
  const std::string what = "critical batch size: 95 % interval of B_crit from the fit, ";
  const std::string how = " (Fieller, " + num(cb.df) + " df: the best steps' scatter about the curve)";
  if (std::isinf(cb.low) || std::isinf(cb.high)) return what + "unbounded: S_min is not clear of 0" + how;
  return what + num(cb.low, 4) + " to " + num(cb.high, 4) + how;
}

// The groups that reached the target, in batch order: for the range of perfect
// scaling and the fit of the critical batch size.
struct Reached {
  std::vector<double> x, steps;
  double perfect_to = std::nan("");  // perfect scaling from the first group up to here
  bool perfect_so_far = true;
  void add(double batch, double best, const std::string& step_regime) {
    x.push_back(batch);
    steps.push_back(best);
    if (std::isnan(perfect_to) || (perfect_so_far && step_regime == "perfect scaling")) {
      perfect_to = batch;
    } else {
      perfect_so_far = false;
    }
  }
  // Each note begins with `line` ("sparsity=0.9: "), the line's keys, or "" for one line.
  void notes(std::vector<std::string>& out, const std::string& key, const std::string& line) const {
    if (x.size() >= 2) {
      out.push_back(line + "perfect scaling from " + key + " " + num(x.front()) + " up to " + num(perfect_to) +
                    " (every step from the first reaching group)");
    }
    const stats::CriticalBatch cb = stats::critical_batch(x, steps);
    out.push_back(line + (cb.why_not.empty()
                              ? "critical batch size: B_crit = " + num(cb.b_crit, 4) + " (" + key + "), S_min = " +
                                    num(cb.s_min, 4) + " steps; fit of steps = S_min (1 + B_crit / " + key +
                                    ") to the best steps, least squares of the relative error (McCandlish et al. 2018)"
                              : "critical batch size: no fit: " + cb.why_not));
    if (cb.why_not.empty()) out.push_back(line + critical_interval_note(cb));
  }
};

}  // namespace

bool scales_the_batch(const std::string& key) { return key == "batch_size" || key == kGlobalBatch || key == "workers"; }

void require_batch_key(const Options& o) {
  if (o.by.empty()) {
    throw UsageError("plot --kind " + o.kind +
                     " needs --by KEY: batch_size, global_batch or workers, then any "
                     "keys whose combinations are lines");
  }
  if (!scales_the_batch(o.by[0])) {
    throw ConfigError("by", o.by[0],
                      "is not a batch size: plot --kind " + o.kind +
                          " draws against batch_size, global_batch or "
                          "workers on log2 axes (steps-to-result --by " +
                          o.by[0] + " tabulates any key)");
  }
}

void check_target(const Options& o) {
  if (std::isnan(o.target)) {
    throw UsageError((o.command == "plot" ? "plot --kind " + o.kind : o.command) +
                     " needs --target VALUE (e.g. 0.9 for 90 % accuracy)");
  }
  if (o.series.find("accuracy") != std::string::npos && !(o.target > 0 && o.target <= 1)) {
    throw ConfigError("target", num(o.target), "must be in (0, 1]: " + o.series + " is a fraction (0.9 for 90 %)");
  }
}

std::vector<Reach> reach_of(const Runs& r, const Options& o) {
  check_target(o);
  // The times to the target as metrics (data.hpp): NaN where a run never reached it.
  const std::string steps_metric = o.series + "@reach=" + format_number(o.target);
  const std::string seconds_metric = o.series + "@reach_time=" + format_number(o.target);
  std::vector<Reach> out;
  for (const Group& g : group_runs(r, o.by, Counted::every)) {
    Reach rc;
    rc.key_values = g.key_values;
    rc.trials = std::int64_t(g.runs.size());
    // Diverged: infeasible. Beaten: a first part of the run, which reaches the
    // target where the whole run would, if it gets there before its end.
    std::vector<const Run*> completed;
    std::copy_if(g.runs.begin(), g.runs.end(), std::back_inserter(completed),
                 [](const Run* run) { return run->completed() || run->beaten(); });
    const std::vector<double> all_steps = metric_values(r, completed, steps_metric);
    const std::vector<double> all_seconds = metric_values(r, completed, seconds_metric);
    std::vector<double> steps, seconds;
    for (std::size_t i = 0; i < completed.size(); ++i) {
      if (std::isnan(all_steps[i])) {
        if (completed[i]->beaten()) continue;  // cut short, not by the budget
        const auto trained = completed[i]->numbers.find("steps");
        if (trained != completed[i]->numbers.end() && !(trained->second <= rc.missed_after)) {
          rc.missed_after = trained->second;
        }
        continue;
      }
      steps.push_back(all_steps[i]);
      seconds.push_back(all_seconds[i]);
      if (std::isnan(rc.best) || all_steps[i] < rc.best) {
        rc.best = all_steps[i];
        const auto lr = completed[i]->numbers.find("lr");
        rc.best_lr = lr == completed[i]->numbers.end() ? std::nan("") : lr->second;
      }
    }
    rc.reached = std::int64_t(steps.size());
    if (!steps.empty()) {
      rc.median = stats::describe(steps).median;
      rc.fastest_s = *std::min_element(seconds.begin(), seconds.end());
      rc.median_s = stats::describe(seconds).median;
    }
    out.push_back(rc);
  }
  return out;
}

const std::vector<std::string>& metaparameter_keys() {
  static const std::vector<std::string> keys = {"lr",           "batch_lr_ratio", "momentum", "lr_end_factor",
                                                "weight_decay", "lr_decay_steps"};
  return keys;
}

std::string trials_pooled_note(const Runs& r, const std::vector<std::string>& by) {
  std::vector<std::string> held = by;
  held.insert(held.end(), metaparameter_keys().begin(), metaparameter_keys().end());
  held.emplace_back("trial");
  const std::string note = pooled_note(r, held);
  if (note.empty()) return note;
  return "the trials of a group are to differ in their metaparameters only, and the best is taken over them: " + note;
}

namespace {

// Each beaten trial ended at an evaluation at or after the steps of the best trial at the
// study's goal, which any target no harder than that goal is reached by too.
std::string beaten_note(const Runs& r) {
  const auto n = std::count_if(r.runs.begin(), r.runs.end(), [](const Run& run) { return run.beaten(); });
  if (n == 0) return "";
  return std::to_string(n) +
         " trial(s) ended beaten (search_stop = beaten), where another trial of their combination had reached the "
         "study's goal: a beaten trial counts where it reached the target before its end. Best is as without "
         "search_stop for a target no harder than that goal on its series; reached, fraction and the medians count a "
         "beaten trial that had not reached the target as missing it (docs/studies.md#beaten-trials)";
}

bool same_value(const std::string& a, const std::string& b) {
  char* ea = nullptr;
  char* eb = nullptr;
  const double x = std::strtod(a.c_str(), &ea), y = std::strtod(b.c_str(), &eb);
  if (!a.empty() && !b.empty() && *ea == 0 && *eb == 0) return x == y;
  return a == b;
}

// Steps/s of the one point matching `keys` = `values` (NaN if none; an error if several).
double steps_per_s(const Speed& s, const std::vector<std::pair<std::string, std::string>>& match,
                   const std::string& path) {
  std::set<std::string> points;
  double found = std::nan("");
  for (std::size_t i = 0; i < s.benchmark.size(); ++i) {
    // Single measurements, or the mean of repetitions.
    if (!(s.run_type[i] == "iteration" || s.aggregate[i] == "mean")) continue;
    bool ok = true;
    for (const auto& [k, v] : match) {
      const auto c = s.columns.find(k);
      if (c != s.columns.end() && !same_value(c->second[i], v)) ok = false;
    }
    if (!ok) continue;
    std::string point = s.benchmark[i].substr(0, s.benchmark[i].find("/iterations:"));
    point = point.substr(0, point.find("/repeats:"));
    point = point.substr(0, point.find("/manual_time"));
    if (points.insert(point).second) found = s.steps_per_s[i];
  }
  if (points.size() > 1) {
    std::string list;
    for (const auto& p : points) list += "\n  " + p;
    throw UsageError(path + ": " + std::to_string(points.size()) +
                     " throughput points match one group; narrow them with --where (a key of the point):" + list);
  }
  return found;
}

}  // namespace

std::vector<ReachLine> reach_lines(const std::vector<Reach>& reach, const std::vector<std::string>& by) {
  std::vector<ReachLine> lines;
  for (const Reach& rc : reach) {
    std::string name;
    for (std::size_t k = 1; k < by.size() && k < rc.key_values.size(); ++k) {
      name += (k > 1 ? " " : "") + by[k] + "=" + rc.key_values[k];
    }
    auto line = std::find_if(lines.begin(), lines.end(), [&](const ReachLine& l) { return l.name == name; });
    if (line == lines.end()) line = lines.insert(lines.end(), ReachLine{name, {}});
    line->points.push_back(&rc);
  }
  for (ReachLine& line : lines) {
    std::stable_sort(line.points.begin(), line.points.end(), [](const Reach* a, const Reach* b) {
      return std::strtod(a->key_values[0].c_str(), nullptr) < std::strtod(b->key_values[0].c_str(), nullptr);
    });
  }
  return lines;
}

namespace {

// A group's keys, counts, steps and times; with --throughput, its steps/s and the time they estimate.
std::vector<std::string> reach_row(const Reach& rc, const Options& o, const Speed& speed) {
  std::vector<std::string> row = rc.key_values;
  for (const std::string& cell :
       {std::to_string(rc.trials), std::to_string(rc.reached),
        num(rc.trials ? double(rc.reached) / double(rc.trials) : std::nan("")), num(rc.best, 8), num(rc.median, 8),
        num(rc.missed_after, 8), num(rc.fastest_s), num(rc.median_s)}) {
    row.push_back(cell);
  }
  if (!o.throughput.empty()) {
    std::vector<std::pair<std::string, std::string>> match;
    for (std::size_t k = 0; k < o.by.size(); ++k) match.emplace_back(o.by[k], rc.key_values[k]);
    for (const std::string& w : o.where) {
      const Comparison c = parse_comparison(w, "where", w);
      if (c.op == "=") match.emplace_back(c.key, c.value);
    }
    const double sps = steps_per_s(speed, match, o.throughput);
    row.push_back(num(sps));
    row.push_back(num(rc.best / sps));
  }
  return row;
}

}  // namespace

std::vector<Table> steps_to_result(const Runs& r, const Options& o) {
  const std::vector<Reach> reach = reach_of(r, o);
  Speed speed;
  if (!o.throughput.empty()) speed = read_speed(o.throughput);
  Table t;
  t.title = "steps to " + o.series + (o.series.find("loss") != std::string::npos ? " <= " : " >= ") + num(o.target) +
            " (first evaluated step; Shallue et al. 2018)";
  t.headers = o.by;
  for (const char* h : {"trials", "reached", "fraction", "best (steps)", "median (steps)", "missed after (steps)",
                        "fastest time (s)", "median time (s)"}) {
    t.headers.push_back(h);
  }
  // Perfect scaling and the regimes are about the global batch: against another key (overlap,
  // sync_period) halving the steps when the key doubles means nothing. Against the batch, the
  // other --by keys make lines of their own (dense and sparse), each with its own regimes and fit.
  const bool scaling = scales_the_batch(o.by[0]) && std::all_of(reach.begin(), reach.end(), [](const Reach& rc) {
                         return std::strtod(rc.key_values[0].c_str(), nullptr) > 0;
                       });
  const bool best_lr = o.by.size() == 1 || scaling;
  if (!o.throughput.empty()) {
    for (const char* h : {"steps/s", "est. time to result (s)"}) t.headers.push_back(h);
  }
  if (scaling) {
    for (const char* h : {"log2 x", "log2 best", "perfect scaling (steps)", "regime"}) t.headers.push_back(h);
  }
  if (best_lr) t.headers.push_back("best trial lr");
  std::vector<ReachLine> lines{{"", {}}};
  if (scaling) {
    lines = reach_lines(reach, o.by);
  } else {
    for (const Reach& rc : reach) lines[0].points.push_back(&rc);
  }
  std::vector<std::string> line_notes;
  for (const ReachLine& line : lines) {
    double x0 = std::nan(""), s0 = std::nan("");  // the line's first group to reach the target
    for (const Reach* rc : line.points) {
      if (!std::isnan(rc->best)) {
        x0 = std::strtod(rc->key_values[0].c_str(), nullptr);
        s0 = rc->best;
        break;
      }
    }
    double prev_x = std::nan(""), prev_s = std::nan("");
    Reached reached;
    for (const Reach* rc : line.points) {
      std::vector<std::string> row = reach_row(*rc, o, speed);
      if (scaling) {
        const double x = std::strtod(rc->key_values[0].c_str(), nullptr);
        row.push_back(num(std::log2(x)));
        row.push_back(num(std::log2(rc->best)));
        row.push_back(num(s0 * x0 / x, 6));
        const std::string step_regime = regime(prev_x, prev_s, x, rc->best);
        row.push_back(step_regime);
        if (!std::isnan(rc->best)) reached.add(x, rc->best, step_regime);
        prev_x = x;
        prev_s = rc->best;
      }
      if (best_lr) row.push_back(num(rc->best_lr));
      t.rows.push_back(row);
    }
    if (scaling) reached.notes(line_notes, o.by[0], line.name.empty() ? "" : line.name + ": ");
  }
  if (const std::string note = trials_pooled_note(r, o.by); !note.empty()) t.notes.push_back(note);
  if (const std::string note = beaten_note(r); !note.empty()) t.notes.push_back(note);
  // A median over the reaching trials alone flatters a group that reaches the target less often.
  if (std::any_of(reach.begin(), reach.end(), [](const Reach& rc) { return rc.reached < rc.trials; })) {
    t.notes.push_back("best and median: of the trials that reached the target (fraction); compare --metric " +
                      o.series + "@reach=" + num(o.target, 10) +
                      " tests the groups with the log-rank test, which counts the others too");
    // A budget (epochs, max_steps) shorter than a group needs hides trials that would reach it later.
    t.notes.push_back(
        "missed after: the most steps a completed trial that missed the target trained, its epochs or max_steps; a "
        "best near it may be the budget's, not the batch size's");
  }
  t.notes.push_back(
      "time: measured, each reaching trial's wall clock when it finished that step (train time_s, the evaluations "
      "before it included), on the processes and threads it ran with (simulated workers share one process); the "
      "fastest trial need not be the best in steps");
  if (!o.throughput.empty()) {
    t.notes.push_back("est. time to result = best steps / steps per second measured by --mode throughput (" +
                      o.throughput + "); evaluation time not included");
  }
  if (scaling) {
    t.notes.push_back("perfect scaling: steps halve when " + o.by[0] +
                      " doubles, from the first group that reaches the target");
    t.notes.push_back(
        "regime of the step from the previous " + o.by[0] + ": e = log(steps ratio) / log(" + o.by[0] +
        " ratio); perfect scaling e >= 0.8, maximal data parallelism e <= 0.1, diminishing returns between");
    if (lines.size() > 1) {
      t.notes.push_back("each combination of " + join(std::vector<std::string>(o.by.begin() + 1, o.by.end()), ", ") +
                        " is a line of its own: its perfect scaling, regimes and critical batch size");
    }
    t.notes.insert(t.notes.end(), line_notes.begin(), line_notes.end());
  }
  return {t};
}

}  // namespace dpstudy::analyze
