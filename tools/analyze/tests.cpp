// dpstudy-analyze summary and anova: the statistics of groups of runs, and
// the factorial ANOVA of their metric (docs/analysis.md). compare: compare.cpp;
// power: power.cpp.
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

std::vector<Table> summary(const Runs& r, const Options& o) {
  const std::string unit = metric_unit(r, o.metric);
  Table t;
  t.title = "summary of " + o.metric + (o.include_diverged ? " (diverged runs included)" : "");
  t.headers = o.by;
  for (const char* h : {"n", "not completed"}) t.headers.push_back(h);
  for (const char* h : {"mean", "sd", "sem", "ci95 low", "ci95 high", "median", "min", "max"}) {
    t.headers.push_back(with_unit(h, unit));
  }
  // A time to a goal: the statistics above are of the runs that reached it; the
  // Kaplan-Meier median counts the others too, censored at their end.
  const bool goal = is_goal_metric(o.metric);
  if (goal) {
    for (const char* h : {"KM median", "KM ci95 low", "KM ci95 high"}) t.headers.push_back(with_unit(h, unit));
  }
  std::size_t copies = 0;
  const Runs cells = with_shared_cells(r, o.by, &copies);
  for (const Group& g : group_runs(cells, o.by, counted_for(o.metric, o.include_diverged))) {
    const stats::Describe d = stats::describe(finite(metric_values(cells, g.runs, o.metric)));
    std::vector<std::string> row = g.key_values;
    row.push_back(std::to_string(d.n));
    row.push_back(std::to_string(g.not_completed));
    for (double v : {d.mean, d.sd, d.sem, d.ci_low, d.ci_high, d.median, d.min, d.max}) row.push_back(num(v));
    if (goal) {
      const stats::SurvivalQuantile m = stats::km_quantile(censored_times(cells, g.runs, o.metric), 0.5);
      for (double v : {m.value, m.low, m.high}) row.push_back(num(v));
    }
    t.rows.push_back(row);
    const std::string name = label(o.by, g.key_values);
    if (goal && std::size_t(d.n) < g.runs.size()) {
      const auto beaten = std::count_if(g.runs.begin(), g.runs.end(), [](const Run* run) { return run->beaten(); });
      t.notes.push_back(name + ": " + std::to_string(g.runs.size() - std::size_t(d.n)) + " of its " +
                        std::to_string(g.runs.size()) + " run(s) never reached the goal" +
                        (beaten > 0 ? ", " + std::to_string(beaten) + " of them beaten (search_stop)" : ""));
    } else if (d.n == 0 && !g.runs.empty()) {
      t.notes.push_back(name + ": no value of " + o.metric + " in its " + std::to_string(g.runs.size()) +
                        " completed run(s)");
    } else if (d.n == 0) {
      t.notes.push_back(name + ": no completed run (" + std::to_string(g.not_completed) +
                        " diverged, beaten or failed)");
    }
    if (d.n == 1) t.notes.push_back(name + ": n = 1, no variance and no confidence interval");
    if (d.n > 1 && d.sd == 0) t.notes.push_back(name + ": every value is the same");
  }
  if (copies > 0) {
    t.notes.push_back("shared runs are listed under every cell they stand for (" + std::to_string(copies) +
                      " more rows' worth): one training for several values of a key that changes nothing in it, "
                      "such as one worker's sync_period; compare and anova count each once "
                      "(docs/studies.md#shared-runs)");
  }
  if (const std::string note = pooled_note(r, o.by); !note.empty()) t.notes.push_back(note);
  if (const std::string note = goal_note(r, o.metric); !note.empty()) t.notes.push_back(note);
  if (goal) {
    t.notes.push_back("KM median: the Kaplan-Meier median " + std::string(unit.empty() ? "" : "(" + unit + ") ") +
                      "of the group's runs, those that never reached the goal (beaten ones too) counted as censored at "
                      "their end; '-' where the estimate never falls below one half, as when half of the runs ran "
                      "their budget without reaching it; KM ci95: its 95 % interval (Brookmeyer-Crowley), 'inf' where "
                      "the runs do not bound it above (docs/analysis.md)");
  }
  return {t};
}

// Factorial ANOVA per family: does one factor's effect depend on another's
// level (Study A: does overlap matter only with local SGD)? docs/analysis.md.
std::vector<Table> anova(const Runs& r, const Options& o) {
  if (o.factors.size() < 2 || o.factors.size() > 4) {
    throw UsageError("anova needs --factors K1,K2 (2 to 4 keys; for one factor use compare --factor K)");
  }
  require_columns(r, o.factors, "--factors");
  Table t;
  t.title = "factorial ANOVA of " + o.metric + ": " + join(o.factors, " x ") + " (Type II sums of squares, F against the residual)";
  t.headers = {"family", "term", "SS", "df", "MS", "F", "p", "", "partial eta^2"};
  // A shared run stands in every family of the cells it stands for (one worker's run
  // at every sync period), and once in each: a family is a test of its own.
  const Runs by_cell = with_shared_cells(r, o.within);
  const Counted counted = counted_for(o.metric, o.include_diverged);
  for (const Group& family : group_runs(by_cell, o.within, counted)) {
    const std::string fam = label(o.within, family.key_values);
    const Runs fr = subset(by_cell, family.runs);
    // Each cell (combination of levels) and its values; a level's index is its place among the factor's values.
    std::vector<std::map<std::string, int>> index(o.factors.size());
    for (std::size_t f = 0; f < o.factors.size(); ++f) {
      for (const Group& g : group_runs(fr, {o.factors[f]}, counted)) {
        index[f].emplace(g.key_values[0], int(index[f].size()));
      }
    }
    std::vector<double> y;
    std::vector<std::vector<int>> levels(o.factors.size());
    std::size_t cells = 0, smallest = SIZE_MAX, largest = 0;
    for (const Group& cell : group_runs(fr, o.factors, counted)) {
      const std::vector<double> v = finite(metric_values(fr, cell.runs, o.metric));
      if (v.empty()) continue;
      ++cells;
      smallest = std::min(smallest, v.size());
      largest = std::max(largest, v.size());
      for (double x : v) {
        y.push_back(x);
        for (std::size_t f = 0; f < o.factors.size(); ++f) levels[f].push_back(index[f].at(cell.key_values[f]));
      }
    }
    std::size_t combinations = 1;
    for (const auto& ix : index) combinations *= ix.size();
    if (cells < 2) {
      t.notes.push_back(fam + ": fewer than 2 cells with completed runs; no test");
      continue;
    }
    const stats::FactorialAnova a = stats::factorial_anova(y, levels);
    for (const stats::AnovaTerm& term : a.terms) {
      std::string name;
      for (int f : term.factors) name += (name.empty() ? "" : " x ") + o.factors[std::size_t(f)];
      t.rows.push_back({fam, name, num(term.ss), num(term.df), term.df > 0 ? num(term.ss / term.df) : "-", num(term.f),
                        pval(term.p), stats::significance(term.p), num(term.partial_eta_sq)});
      if (term.df == 0) t.notes.push_back(fam + ": " + name + " cannot be estimated (empty cells or one level)");
    }
    t.rows.push_back({fam, "residual", num(a.residual_ss), num(a.residual_df),
                      a.residual_df > 0 ? num(a.residual_ss / a.residual_df) : "-", "", "", "", ""});
    t.notes.push_back(fam + ": " + std::to_string(y.size()) + " runs in " + std::to_string(cells) + " of " +
                      std::to_string(combinations) + " cells, " +
                      (smallest == largest ? std::to_string(smallest) + " per cell" +
                                                 (cells == combinations ? " (balanced)" : "")
                                           : std::to_string(smallest) + " to " + std::to_string(largest) +
                                                 " per cell (unbalanced: Type II tests each term after those "
                                                 "not containing it)"));
    if (a.residual_df <= 0) t.notes.push_back(fam + ": one run per cell leaves no residual; no F test (add seeds)");
  }
  std::vector<std::string> held = o.within;
  held.insert(held.end(), o.factors.begin(), o.factors.end());
  if (const std::string note = pooled_note(r, held); !note.empty()) t.notes.push_back(note);
  if (const std::string note = goal_note(r, o.metric); !note.empty()) t.notes.push_back(note);
  return {t};
}

}  // namespace dpstudy::analyze
