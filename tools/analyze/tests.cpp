// dpstudy-analyze summary, compare, anova and power: groups of runs, their
// statistics and significance tests (docs/analysis.md).
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
  for (const Group& g : group_runs(cells, o.by, o.include_diverged)) {
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
      t.notes.push_back(name + ": " + std::to_string(g.runs.size() - std::size_t(d.n)) + " of its " +
                        std::to_string(g.runs.size()) + " run(s) never reached the goal");
    } else if (d.n == 0 && !g.runs.empty()) {
      t.notes.push_back(name + ": no value of " + o.metric + " in its " + std::to_string(g.runs.size()) +
                        " completed run(s)");
    } else if (d.n == 0) {
      t.notes.push_back(name + ": no completed run (" + std::to_string(g.not_completed) + " diverged or failed)");
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
                      "of the group's runs, those that never reached the goal counted as censored at their end; '-' "
                      "where half or more of them never reached it; KM ci95: its 95 % interval (Brookmeyer-Crowley), "
                      "'inf' where the runs do not bound it above (docs/analysis.md)");
  }
  return {t};
}

namespace {

struct Pair {
  std::size_t a, b;
};

std::vector<Pair> pairs_of(const std::vector<Group>& levels, const std::string& baseline, std::vector<std::string>& notes,
                           const std::string& family) {
  std::vector<Pair> out;
  if (!baseline.empty()) {
    auto it = std::find_if(levels.begin(), levels.end(), [&](const Group& g) { return g.key_values[0] == baseline; });
    if (it == levels.end()) {
      notes.push_back(family + ": baseline level " + baseline + " is missing; no pairwise comparison");
      return out;
    }
    const std::size_t base = std::size_t(it - levels.begin());
    for (std::size_t i = 0; i < levels.size(); ++i) {
      if (i != base) out.push_back({base, i});
    }
    return out;
  }
  for (std::size_t i = 0; i < levels.size(); ++i) {
    for (std::size_t j = i + 1; j < levels.size(); ++j) out.push_back({i, j});
  }
  return out;
}

// Values of two levels matched by seed (runs with one value per seed in each), and the seeds with
// more than one run in either (other keys pooled in a level): those are not paired, and a reader
// of "pairs 0" is to learn why.
struct Matched {
  std::vector<double> a, b;
  std::vector<std::string> repeated_seeds;
};
Matched paired(const Runs& r, const Group& a, const Group& b, const std::string& metric) {
  std::map<double, double> va, vb;
  const auto xa = metric_values(r, a.runs, metric), xb = metric_values(r, b.runs, metric);
  std::map<double, int> ca, cb;
  for (std::size_t i = 0; i < a.runs.size(); ++i) ++ca[a.runs[i]->numbers.at("seed")], va[a.runs[i]->numbers.at("seed")] = xa[i];
  for (std::size_t i = 0; i < b.runs.size(); ++i) ++cb[b.runs[i]->numbers.at("seed")], vb[b.runs[i]->numbers.at("seed")] = xb[i];
  Matched m;
  for (const auto& [seed, v] : va) {
    if (ca[seed] == 1 && cb.count(seed) && cb[seed] == 1 && !std::isnan(v) && !std::isnan(vb[seed])) {
      m.a.push_back(v);
      m.b.push_back(vb[seed]);
    }
  }
  std::set<double> repeated;
  for (const auto* counts : {&ca, &cb}) {
    for (const auto& [seed, n] : *counts) {
      if (n > 1) repeated.insert(seed);
    }
  }
  for (double seed : repeated) m.repeated_seeds.push_back(num(seed));
  return m;
}

template <typename F>
double p_or_nan(F&& f, std::vector<std::string>& notes, const std::string& what) {
  try {
    return f().p;
  } catch (const UsageError& e) {
    notes.push_back(what + ": " + e.what());
    return std::nan("");
  }
}

// The equivalence test's interval, 1 - 2 alpha: "90%" at alpha 0.05; digits enough not to read 100%.
std::string tost_interval(double alpha) { return num(100 - 200 * alpha, 10) + "%"; }

}  // namespace

// A --baseline that is no level of the factor at all is a typo, not a missing level.
void check_baseline(const Runs& r, const Options& o) {
  if (o.baseline.empty()) return;
  std::string levels;
  for (const Group& g : group_runs(r, {o.factor}, true)) {
    if (g.key_values[0] == o.baseline) return;
    levels += (levels.empty() ? "" : ", ") + g.key_values[0];
  }
  throw ConfigError("baseline", o.baseline, "is not a level of " + o.factor + "; its levels: " + levels);
}

namespace {

// One family's omnibus tests across the factor's levels (`values` per level;
// `times` for the log-rank test of a time to a goal; `never`: levels none of
// whose runs reached it).
void add_omnibus(Table& omni, const std::string& fam, const std::vector<std::vector<double>>& values,
                 const std::vector<stats::Censored>& times, const std::vector<std::string>& never, const Options& o,
                 bool goal) {
  const std::size_t levels = values.size();
  if (levels >= 2) {
    for (const auto& [name, fn] :
         std::vector<std::pair<std::string, stats::Test (*)(const std::vector<std::vector<double>>&)>>{
             {"one-way ANOVA", stats::anova},
             {"Welch ANOVA", stats::welch_anova},
             {"Kruskal-Wallis", stats::kruskal}}) {
      if (!never.empty()) {
        omni.rows.push_back({fam, name, "-", "-", "-", "-", "-"});
        continue;
      }
      try {
        const stats::Test t = fn(values);
        omni.rows.push_back({fam, name, num(t.statistic), num(t.df), std::isnan(t.df2) ? "-" : num(t.df2), pval(t.p),
                             stats::significance(t.p)});
      } catch (const UsageError& e) {
        omni.rows.push_back({fam, name, "-", "-", "-", "-", "-"});
        omni.notes.push_back(fam + ", " + name + ": " + e.what());
      }
    }
    if (goal) {
      try {
        const stats::Test t = stats::logrank(times);
        omni.rows.push_back({fam, "log-rank", num(t.statistic), num(t.df), "-", pval(t.p), stats::significance(t.p)});
      } catch (const UsageError& e) {
        omni.rows.push_back({fam, "log-rank", "-", "-", "-", "-", "-"});
        omni.notes.push_back(fam + ", log-rank: " + e.what());
      }
    }
  } else {
    omni.notes.push_back(fam + ": fewer than 2 levels of " + o.factor + " with completed runs");
  }
}

// One family's pairwise comparisons, Holm-adjusted within the family.
void add_pairwise(Table& pw, const std::string& fam, const Runs& fr, const std::vector<Group>& levels,
                  const std::vector<std::vector<double>>& values, const std::vector<stats::Censored>& times,
                  const Options& o, bool goal, bool tost) {
  const std::vector<Pair> pairs = pairs_of(levels, o.baseline, pw.notes, fam);
  std::vector<double> welch, mwu, pt, wx, eq, lr;
  std::vector<std::string> eq_ci;
  std::vector<std::vector<std::string>> rows;
  std::vector<std::size_t> npairs;
  for (const Pair& p : pairs) {
    const auto& a = values[p.a];
    const auto& b = values[p.b];
    const std::string what = fam + ", " + levels[p.a].key_values[0] + " vs " + levels[p.b].key_values[0];
    welch.push_back(p_or_nan([&] { return stats::welch_t(b, a); }, pw.notes, what + ", Welch"));
    if (goal) {
      lr.push_back(p_or_nan([&] { return stats::logrank({times[p.a], times[p.b]}); }, pw.notes, what + ", log-rank"));
    }
    mwu.push_back(p_or_nan([&] { return stats::mann_whitney_u(b, a); }, pw.notes, what + ", Mann-Whitney"));
    // Named, not a structured binding: C++17 lets no lambda capture one (GCC allows it, Clang before 16 not).
    const Matched matched = paired(fr, levels[p.a], levels[p.b], o.metric);
    const std::vector<double>& pa = matched.a;
    const std::vector<double>& pb = matched.b;
    npairs.push_back(pa.size());
    if (pa.size() < 2) {
      const std::vector<std::string>& repeated = matched.repeated_seeds;
      if (!repeated.empty()) {
        const bool one = repeated.size() == 1;
        pw.notes.push_back(what + ": no paired tests: seed" + (one ? " " : "s ") + join(repeated, ", ") +
                           (one ? " has" : " have") +
                           " several runs in a level (other keys pooled); a --within or --where on those keys "
                           "leaves one run per seed");
      }
    }
    pt.push_back(pa.size() >= 2 ? p_or_nan([&] { return stats::paired_t(pb, pa); }, pw.notes, what + ", paired t")
                                : std::nan(""));
    wx.push_back(pa.size() >= 2 ? p_or_nan([&] { return stats::wilcoxon(pb, pa); }, pw.notes, what + ", Wilcoxon")
                                : std::nan(""));
    // The difference's own scale (points of accuracy), beside the standardized one; each
    // interval is for its pair alone (not adjusted for the family's other pairs).
    std::string ci = "-";
    try {
      const stats::DiffInterval d = stats::welch_interval(b, a);
      ci = "[" + num(d.low) + ", " + num(d.high) + "]";
    } catch (const UsageError&) {  // fewer than 2 runs in a level: the Welch note says so
    }
    std::string g = "-";
    try {
      const stats::Effect e = stats::hedges_g(b, a);
      g = num(e.g, 3) + " [" + num(e.ci_low, 3) + ", " + num(e.ci_high, 3) + "]";
    } catch (const UsageError&) {
    }
    if (tost) {
      try {
        const stats::Equivalence e = stats::welch_tost(b, a, o.equivalence, o.alpha);
        eq.push_back(e.p);
        eq_ci.push_back("[" + num(e.ci_low) + ", " + num(e.ci_high) + "]");
      } catch (const UsageError& e) {
        pw.notes.push_back(what + ", equivalence: " + e.what());
        eq.push_back(std::nan(""));
        eq_ci.push_back("-");
      }
    }
    const double diff = (a.empty() || b.empty()) ? std::nan("") : stats::describe(b).mean - stats::describe(a).mean;
    rows.push_back({fam, levels[p.a].key_values[0], levels[p.b].key_values[0], std::to_string(a.size()),
                    std::to_string(b.size()), num(diff), ci, g});
  }
  const auto hw = stats::holm(welch), hm = stats::holm(mwu), hp = stats::holm(pt), hx = stats::holm(wx);
  const auto he = stats::holm(eq), hl = stats::holm(lr);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    auto row = rows[i];
    for (const std::string& cell : {pval(welch[i]), pval(hw[i]), stats::significance(hw[i]), pval(hm[i]),
                                    std::to_string(npairs[i]), pval(hp[i]), pval(hx[i])}) {
      row.push_back(cell);
    }
    if (goal) row.push_back(pval(hl[i]));
    if (tost) {
      row.push_back(eq_ci[i]);
      row.push_back(pval(he[i]));
      row.push_back(std::isnan(he[i]) ? "-" : he[i] < o.alpha ? "equivalent" : "not shown");
    }
    pw.rows.push_back(row);
  }
}

}  // namespace

std::vector<Table> compare(const Runs& r, const Options& o) {
  if (o.factor.empty()) throw UsageError("compare needs --factor KEY");
  require_columns(r, {o.factor}, "--factor");
  check_baseline(r, o);
  const std::string unit = metric_unit(r, o.metric);
  const std::vector<Group> all_levels = group_runs(r, {o.factor}, false);
  Table omni, pw;
  omni.title = "omnibus tests of " + o.metric + " across " + o.factor;
  // F(df1, df2): Welch's ANOVA differs from the one-way ANOVA in its df2 alone, fractional.
  omni.headers = {"family", "test", "statistic", "df1", "df2", "p", ""};
  pw.title = "pairwise comparisons of " + o.metric + " (p adjusted by Holm within each family)";
  pw.headers = {"family", o.factor + " a", o.factor + " b", "n a", "n b", with_unit("mean b - a", unit),
                with_unit("95% CI of b - a", unit), "Hedges g [95% CI]", "Welch p", "Welch p Holm", "",
                "M-W U p Holm", "pairs", "paired t p Holm", "Wilcoxon p Holm"};
  const bool tost = o.equivalence > 0;
  // Times to a goal: the log-rank test sees every run, those that never reached it censored.
  const bool goal = is_goal_metric(o.metric);
  if (goal) pw.headers.push_back("log-rank p Holm");
  if (tost) {
    for (const std::string& h : {with_unit(tost_interval(o.alpha) + " CI of b - a", unit), std::string("TOST p Holm"),
                                 "within +/-" + num(o.equivalence)}) {
      pw.headers.push_back(h);
    }
  }
  // A shared run stands in every family of the cells it stands for (one worker's run
  // at every sync period), and once in each: a family is a test of its own.
  const Runs by_cell = with_shared_cells(r, o.within);
  for (const Group& family : group_runs(by_cell, o.within, false)) {
    const std::string fam = label(o.within, family.key_values);
    const Runs fr = subset(by_cell, family.runs);
    std::vector<Group> levels = group_runs(fr, {o.factor}, o.include_diverged);
    levels.erase(std::remove_if(levels.begin(), levels.end(), [](const Group& g) { return g.runs.empty(); }), levels.end());
    for (const Group& l : all_levels) {
      if (std::none_of(levels.begin(), levels.end(), [&](const Group& g) { return g.key_values == l.key_values; })) {
        pw.notes.push_back(fam + ": level " + o.factor + "=" + l.key_values[0] + " has no completed run here");
      }
    }
    std::vector<std::vector<double>> values;
    for (const Group& g : levels) values.push_back(finite(metric_values(fr, g.runs, o.metric)));
    std::vector<stats::Censored> times;  // a time to a goal's runs, for the log-rank test
    if (goal) {
      for (const Group& g : levels) times.push_back(censored_times(fr, g.runs, o.metric));
    }
    // A level none of whose runs reached the goal has no values: one note for the three tests.
    std::vector<std::string> never;
    for (std::size_t i = 0; goal && i < levels.size(); ++i) {
      if (values[i].empty()) never.push_back(o.factor + "=" + levels[i].key_values[0]);
    }
    if (levels.size() >= 2 && !never.empty()) {
      omni.notes.push_back(fam + ", one-way ANOVA, Welch ANOVA and Kruskal-Wallis: no run of " + join(never, ", ") +
                           " reached the goal, so they have nothing to compare (the log-rank test counts those runs)");
    }
    add_omnibus(omni, fam, values, times, never, o, goal);
    add_pairwise(pw, fam, fr, levels, values, times, o, goal, tost);
  }
  if (goal) {
    omni.notes.push_back("log-rank (Mantel 1966): every run of a level counts, one that never reached the goal as "
                         "censored at its end (its " + std::string(metric_unit(r, o.metric) == "s" ? "wall_time_s" : "steps") +
                         "); the other tests see only the runs that reached it");
  }
  if (tost) {
    pw.notes.push_back("equivalence: two one-sided Welch t-tests (Schuirmann 1987) that mean b - a lies within +/-" +
                       num(o.equivalence) + " " + unit + "; \"equivalent\" when their Holm-adjusted p < " +
                       num(o.alpha) + " (the " + tost_interval(o.alpha) +
                       " interval then lies inside the margin); \"not shown\" is no evidence of a difference");
  }
  pw.notes.push_back("marks: *** p < 0.001, ** < 0.01, * < 0.05 (Welch, Holm-adjusted); paired tests match runs "
                     "by seed: the same seed means the same initial weights and sampler streams; the 95% CI of b - a "
                     "is Welch's, for each pair alone (not adjusted like the p-values)");
  std::vector<std::string> held = o.within;
  held.push_back(o.factor);
  if (const std::string note = pooled_note(r, held); !note.empty()) omni.notes.push_back(note);
  if (const std::string note = goal_note(r, o.metric); !note.empty()) omni.notes.push_back(note);
  return {omni, pw};
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
  for (const Group& family : group_runs(by_cell, o.within, false)) {
    const std::string fam = label(o.within, family.key_values);
    const Runs fr = subset(by_cell, family.runs);
    // Each cell (combination of levels) and its values; a level's index is its place among the factor's values.
    std::vector<std::map<std::string, int>> index(o.factors.size());
    for (std::size_t f = 0; f < o.factors.size(); ++f) {
      for (const Group& g : group_runs(fr, {o.factors[f]}, o.include_diverged)) {
        index[f].emplace(g.key_values[0], int(index[f].size()));
      }
    }
    std::vector<double> y;
    std::vector<std::vector<int>> levels(o.factors.size());
    std::size_t cells = 0, smallest = SIZE_MAX, largest = 0;
    for (const Group& cell : group_runs(fr, o.factors, o.include_diverged)) {
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
                                           const Options& o, SimulatedDesigns& designs, std::vector<std::string>& notes) {
  const stats::Censored ta = censored_times(fr, a.runs, o.metric), tb = censored_times(fr, b.runs, o.metric);
  const auto n = double(ta.time.size() + tb.time.size());
  const auto reached = double(std::count(ta.event.begin(), ta.event.end(), true) +
                              std::count(tb.event.begin(), tb.event.end(), true));
  // Runs reaching the goal in steps do so at an evaluation: those at one tie.
  const std::vector<double> by_time = stats::reached_by_time(ta, tb);
  std::vector<std::string> row = {fam, a.key_values[0], b.key_values[0], std::to_string(ta.time.size()),
                                  std::to_string(tb.time.size()), num(reached), std::to_string(by_time.size())};
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

}  // namespace

std::vector<Table> power(const Runs& r, const Options& o) {
  if (o.factor.empty()) throw UsageError("power needs --factor KEY");
  require_columns(r, {o.factor}, "--factor");
  check_baseline(r, o);
  Table t;
  t.title = "power of Welch's t-test on " + o.metric + " at alpha " + num(o.alpha) + ", power " + num(o.power);
  const std::string unit = metric_unit(r, o.metric);
  t.headers = {"family", o.factor + " a", o.factor + " b", "n a", "n b", "detectable d", with_unit("detectable diff", unit)};
  if (o.effect > 0) t.headers.push_back("seeds per group for d=" + num(o.effect));
  if (o.equivalence > 0) t.headers.push_back("seeds per group for equivalence within +/-" + num(o.equivalence));
  // A time to a goal: the log-rank test's power too, every run counted (Schoenfeld).
  const bool goal = is_goal_metric(o.metric);
  Table lr;
  lr.title = "power of the log-rank test on " + o.metric + " at alpha " + num(o.alpha) + ", power " + num(o.power) +
             " (every run counted, those that never reached the goal censored)";
  SimulatedDesigns designs;
  lr.headers = {"family", o.factor + " a", o.factor + " b", "runs a", "runs b", "reached", "distinct times",
                "detectable hazard ratio", "detectable hazard ratio (simulated)"};
  if (o.hazard_ratio > 0) {
    const std::string needed = "runs per group for hazard ratio " + num(o.hazard_ratio);
    lr.headers.push_back(needed);
    lr.headers.push_back(needed + " (simulated)");
  }
  // A shared run stands in every family of the cells it stands for (one worker's run
  // at every sync period), and once in each: a family is a test of its own.
  const Runs by_cell = with_shared_cells(r, o.within);
  for (const Group& family : group_runs(by_cell, o.within, false)) {
    const std::string fam = label(o.within, family.key_values);
    const Runs fr = subset(by_cell, family.runs);
    std::vector<Group> levels = group_runs(fr, {o.factor}, false);
    levels.erase(std::remove_if(levels.begin(), levels.end(), [](const Group& g) { return g.runs.empty(); }), levels.end());
    for (const Pair& p : pairs_of(levels, o.baseline, t.notes, fam)) {
      const auto a = finite(metric_values(fr, levels[p.a].runs, o.metric));
      const auto b = finite(metric_values(fr, levels[p.b].runs, o.metric));
      std::vector<std::string> row = {fam, levels[p.a].key_values[0], levels[p.b].key_values[0], std::to_string(a.size()),
                                      std::to_string(b.size())};
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
    t.notes.push_back("equivalence: seeds per group for the two one-sided tests to show |diff| < " +
                      num(o.equivalence) + " with the power above if the true difference is 0, at the pair's pooled "
                      "sd (the power computed exactly over Welch's df, docs/analysis.md; - where the sd is 0 or undefined)");
  }
  std::vector<std::string> held = o.within;
  held.push_back(o.factor);
  const std::string pooled = pooled_note(r, held);
  if (!pooled.empty()) t.notes.push_back(pooled);
  if (const std::string note = goal_note(r, o.metric); !note.empty()) t.notes.push_back(note);
  if (!goal) return {t};
  lr.notes.push_back("the hazard ratio is how many times faster one level's runs reach the goal than the other's, at "
                     "any step, taken as constant (proportional hazards); R and 1/R are detected alike. Schoenfeld's "
                     "approximation: reached x share a x share b x ln(R)^2 = (z_(1-alpha/2) + z_power)^2, with the "
                     "runs that reached the goal (events) counted over the pair. It is optimistic for few events: "
                     "at the ratio it gives, simulated pairs of 3, 10 and 30 runs per group, every run reaching the "
                     "goal, detect it in 60, 72 and 77 % of studies, not 80 %, and less where times tie (docs/analysis.md)");
  lr.notes.push_back("(simulated): the same for this pair's design, by 5,000 simulated studies of it: its runs a and "
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
  return {t, lr};
}

}  // namespace dpstudy::analyze
