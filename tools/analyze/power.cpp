// dpstudy-analyze power: what the runs of each pair of levels can detect, and
// how many runs a wanted effect needs (docs/analysis.md).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>
#include <vector>

#include "commands.hpp"
#include "dpstudy/error.hpp"
#include "dpstudy/stats.hpp"

namespace dpstudy::analyze {

namespace {

constexpr double kMostSimulatedRuns = 1000;  // a pair's runs

// The simulated figures by design: the pairs of a table often share one (every
// family's levels with all their runs at the goal), and each takes a search.
struct SimulatedDesigns {
  std::map<std::tuple<std::int64_t, std::int64_t, double, std::vector<double>>, double> detectable;
  std::map<std::pair<double, std::vector<double>>, std::int64_t> needed;  // by how the runs reach the goal
};

// One pair's row of the log-rank power table: its runs, how many reached the
// goal, the hazard ratio detectable with them, and the runs per group that
// --hazard_ratio needs at the fraction reaching it here.
std::vector<std::string> logrank_power_row(const Runs& fr, const Group& a, const Group& b, const std::string& fam,
                                           const Options& o, SimulatedDesigns& designs,
                                           std::vector<std::string>& notes) {
  const stats::Censored ta = censored_times(fr, a.runs, o.metric), tb = censored_times(fr, b.runs, o.metric);
  const auto n = double(ta.time.size() + tb.time.size());
  const auto reached =
      double(std::count(ta.event.begin(), ta.event.end(), true) + std::count(tb.event.begin(), tb.event.end(), true));
  // Runs reaching the goal in steps do so at an evaluation: those at one tie.
  const std::vector<double> by_time = stats::reached_by_time(ta, tb);
  std::vector<std::string> row = {fam,
                                  a.key_values[0],
                                  b.key_values[0],
                                  std::to_string(ta.time.size()),
                                  std::to_string(tb.time.size()),
                                  num(reached),
                                  std::to_string(by_time.size())};
  if (reached == 0 || ta.time.empty() || tb.time.empty()) {
    row.insert(row.end(), o.hazard_ratio > 0 ? 4 : 2, "-");
    notes.push_back(fam + ", " + a.key_values[0] + " vs " + b.key_values[0] +
                    ": no run reached the goal, so nothing bounds the hazard ratio");
    return row;
  }
  row.push_back(num(stats::logrank_detectable_hazard_ratio(reached, double(ta.time.size()) / n, o.alpha, o.power), 3));
  // The design simulated (few events, where Schoenfeld is optimistic; steps tied
  // at evaluations); past a few hundred runs the two agree (1.490 and 1.486 at
  // 100 a group, continuous times) and it would only cost time.
  const stats::Reaching reaching{reached / n, goal_in_steps(o.metric) ? by_time : std::vector<double>{}};
  if (n <= kMostSimulatedRuns) {
    const auto n_a = std::int64_t(ta.time.size()), n_b = std::int64_t(tb.time.size());
    const auto design = std::make_tuple(n_a, n_b, reaching.reached, reaching.by_time);
    if (!designs.detectable.count(design)) {
      designs.detectable[design] =
          stats::logrank_detectable_hazard_ratio_simulated(n_a, n_b, reaching, o.alpha, o.power);
    }
    const double ratio = designs.detectable[design];
    row.push_back(std::isinf(ratio) ? "over 1000" : num(ratio, 3));
  } else {
    row.push_back("-");
  }
  if (o.hazard_ratio > 0) {
    // At least 2 runs a group, as the other tests need; none beyond 10^7, as tost_samples_needed.
    const double events = stats::logrank_events_needed(o.hazard_ratio, 0.5, o.alpha, o.power);
    const double per_group = std::max(2.0, std::ceil(events / (reached / n) / 2));
    row.push_back(per_group <= 1e7 ? std::to_string(std::int64_t(per_group)) : "over 10^7");
    const auto design = std::make_pair(reaching.reached, reaching.by_time);
    if (!designs.needed.count(design)) {
      designs.needed[design] = stats::logrank_runs_needed_simulated(o.hazard_ratio, reaching, o.alpha, o.power);
    }
    const std::int64_t simulated = designs.needed[design];
    row.push_back(simulated > 0 ? std::to_string(simulated) : "over 1000");
  }
  return row;
}

// The log-rank power table's title and headers.
Table logrank_power_table(const Options& o) {
  Table lr;
  lr.title = "power of the log-rank test on " + o.metric + " at alpha " + num(o.alpha) + ", power " + num(o.power) +
             " (every run counted, those that never reached the goal censored)";
  lr.headers = {"family",
                o.factor + " a",
                o.factor + " b",
                "runs a",
                "runs b",
                "reached",
                "distinct times",
                "detectable hazard ratio",
                "detectable hazard ratio (simulated)"};
  if (o.hazard_ratio > 0) {
    const std::string needed = "runs per group for hazard ratio " + num(o.hazard_ratio);
    lr.headers.push_back(needed);
    lr.headers.push_back(needed + " (simulated)");
  }
  return lr;
}

// What its columns mean, and the note of runs pooled (`pooled`, if any).
void add_logrank_notes(Table& lr, const Options& o, const std::string& pooled) {
  lr.notes.push_back(
      "the hazard ratio is how many times faster one level's runs reach the goal than the other's, at "
      "any step, taken as constant (proportional hazards); R and 1/R are detected alike. Schoenfeld's "
      "approximation: reached x share a x share b x ln(R)^2 = (z_(1-alpha/2) + z_power)^2, with the "
      "runs that reached the goal (events) counted over the pair. It is optimistic for few events: "
      "at the ratio it gives, simulated pairs of 3, 10 and 30 runs per group, every run reaching the "
      "goal, detect it in 60, 72 and 77 % of studies, not 80 %, and less where times tie (docs/analysis.md)");
  lr.notes.push_back(
      "(simulated): the same for this pair's design, by 5,000 simulated studies of it: its runs a and "
      "b, proportional hazards, one end by which the fraction of the pair's runs reached here reach "
      "the goal (the others censored there), and for steps the ties of evaluations as the pair's runs "
      "had them (distinct times: the steps at which they reached it, each cutting the simulated runs "
      "at the fraction of the pair's runs at the goal by then); exact but for the simulation's error "
      "(under 1 % of power; the test reads the times' order only, so no distribution of times is "
      "assumed) and, for steps, cuts taken from the runs at hand, fewer than the evaluations between "
      "them would give where runs are few (a few points of power lower than with the true "
      "evaluations, docs/analysis.md): read these; over 1000: no ratio (no runs per group) up to 1000 "
      "is detected so; - beyond 1000 runs in a pair, where the two agree for times that do not tie");
  if (!pooled.empty()) lr.notes.push_back(pooled);
  if (o.hazard_ratio > 0) {
    lr.notes.push_back("runs per group for hazard ratio " + num(o.hazard_ratio) + ": the events it needs, " +
                       num(stats::logrank_events_needed(o.hazard_ratio, 0.5, o.alpha, o.power), 3) +
                       ", over the fraction of the pair's runs that reached the goal here");
  }
}

}  // namespace

std::vector<Table> power(const Runs& r, const Options& o) {
  if (o.factor.empty()) throw UsageError("power needs --factor KEY");
  require_columns(r, {o.factor}, "--factor");
  check_baseline(r, o);
  Table t;
  t.title = "power of Welch's t-test on " + o.metric + " at alpha " + num(o.alpha) + ", power " + num(o.power);
  const std::string unit = metric_unit(r, o.metric);
  t.headers = {
      "family", o.factor + " a", o.factor + " b", "n a", "n b", "detectable d", with_unit("detectable diff", unit)};
  if (o.effect > 0) t.headers.push_back("seeds per group for d=" + num(o.effect));
  if (o.equivalence > 0) t.headers.push_back("seeds per group for equivalence within +/-" + num(o.equivalence));
  // A time to a goal: the log-rank test's power too, every run counted (Schoenfeld).
  const bool goal = is_goal_metric(o.metric);
  Table lr = logrank_power_table(o);
  SimulatedDesigns designs;
  // A shared run stands in every family of the cells it stands for (one worker's run
  // at every sync period), and once in each: a family is a test of its own.
  const Runs by_cell = with_shared_cells(r, o.within);
  for (const Group& family : group_runs(by_cell, o.within, counted_for(o.metric, false))) {
    const std::string fam = label(o.within, family.key_values);
    const Runs fr = subset(by_cell, family.runs);
    std::vector<Group> levels = group_runs(fr, {o.factor}, counted_for(o.metric, false));
    levels.erase(std::remove_if(levels.begin(), levels.end(), [](const Group& g) { return g.runs.empty(); }),
                 levels.end());
    for (const LevelPair& p : level_pairs(levels, o.baseline, t.notes, fam)) {
      const auto a = finite(metric_values(fr, levels[p.a].runs, o.metric));
      const auto b = finite(metric_values(fr, levels[p.b].runs, o.metric));
      std::vector<std::string> row = {fam, levels[p.a].key_values[0], levels[p.b].key_values[0],
                                      std::to_string(a.size()), std::to_string(b.size())};
      double sp = std::nan("");
      try {
        const double d = stats::detectable_effect(std::int64_t(a.size()), std::int64_t(b.size()), o.alpha, o.power);
        const double sa = stats::describe(a).sd, sb = stats::describe(b).sd;
        sp = std::sqrt(((a.size() - 1) * sa * sa + (b.size() - 1) * sb * sb) / double(a.size() + b.size() - 2));
        row.push_back(num(d, 3));
        row.push_back(num(d * sp, 3));
      } catch (const UsageError& e) {
        row.push_back("-");
        row.push_back("-");
        t.notes.push_back(fam + ": " + e.what());
      }
      if (o.effect > 0) row.push_back(std::to_string(stats::samples_needed(o.effect, o.alpha, o.power)));
      if (o.equivalence > 0) {  // at the pair's pooled sd; a true difference of 0
        const std::int64_t n = sp > 0 ? stats::tost_samples_needed(o.equivalence / sp, o.alpha, o.power) : -1;
        row.push_back(n > 0 ? std::to_string(n) : "-");
      }
      t.rows.push_back(row);
      if (goal) lr.rows.push_back(logrank_power_row(fr, levels[p.a], levels[p.b], fam, o, designs, lr.notes));
    }
  }
  t.notes.push_back("d is Cohen's standardised difference; the detectable difference is d x the pooled sd");
  if (o.equivalence > 0) {
    t.notes.push_back(
        "equivalence: seeds per group for the two one-sided tests to show |diff| < " + num(o.equivalence) +
        " with the power above if the true difference is 0, at the pair's pooled "
        "sd (the power computed exactly over Welch's df, docs/analysis.md; - where the sd is 0 or undefined)");
  }
  std::vector<std::string> held = o.within;
  held.push_back(o.factor);
  const std::string pooled = pooled_note(r, held);
  if (!pooled.empty()) t.notes.push_back(pooled);
  if (const std::string note = goal_note(r, o.metric); !note.empty()) t.notes.push_back(note);
  if (!goal) return {t};
  add_logrank_notes(lr, o, pooled);
  return {t, lr};
}

}  // namespace dpstudy::analyze
