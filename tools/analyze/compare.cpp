// dpstudy-analyze compare: per family, the omnibus tests across a factor's
// levels and the pairwise tests between them, Holm-corrected (docs/analysis.md).
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

std::vector<LevelPair> level_pairs(const std::vector<Group>& levels, const std::string& baseline,
                                   std::vector<std::string>& notes, const std::string& family) {
  std::vector<LevelPair> out;
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

namespace {

// A run's pairing unit: its seed, and its search trial where it has one. The
// trial of one index is the same point of the search's metaparameters in every
// combination of a study, so dense and sparse at trial 3 share their rates.
// Another folder's trial k may be another search's point: the folder is part
// of a trial's unit.
struct Unit {
  double seed, trial;  // trial -1 outside a search
  std::string folder;  // a trial's study folder; empty outside a search
  bool operator<(const Unit& o) const { return std::tie(seed, trial, folder) < std::tie(o.seed, o.trial, o.folder); }
};
Unit unit_of(const Run& run) {
  // NaN: a run outside the search, in a folder whose index has searched runs too.
  const auto trial = run.numbers.find("trial");
  if (trial == run.numbers.end() || std::isnan(trial->second)) return {run.numbers.at("seed"), -1, {}};
  return {run.numbers.at("seed"), trial->second, run.texts.at("study_dir")};
}

bool any_trial(const std::set<Unit>& units) {
  return std::any_of(units.begin(), units.end(), [](const Unit& u) { return u.trial >= 0; });
}

// "seeds 1, 2, 3", or "seed 1 trial 0, seed 1 trial 1, seed 1 trial 2 and 30 more": one note line.
std::string units_text(const std::set<Unit>& units) {
  const bool trials = any_trial(units);
  std::vector<std::string> shown;
  for (const Unit& u : units) {
    if (shown.size() == 3) break;
    shown.push_back(trials ? "seed " + num(u.seed) + (u.trial >= 0 ? " trial " + num(u.trial) : "") : num(u.seed));
  }
  const std::string lead = trials ? "" : units.size() == 1 ? "seed " : "seeds ";
  std::string text = lead + join(shown, ", ");
  if (units.size() > shown.size()) text += " and " + std::to_string(units.size() - shown.size()) + " more";
  return text;
}

// Values of two levels matched by pairing unit (runs with one value per unit in each), and the
// units of both levels with more than one run in either (other keys pooled in a level): those
// are not paired, and a reader of "pairs 0" is to learn why.
struct Matched {
  std::vector<double> a, b;
  std::set<Unit> repeated;
  std::size_t other_points = 0;  // trials of one index at other points of a search: not paired
};

// Whether two runs of one trial index share its metaparameters, the factor excepted: a
// study folder can hold a second search under its name, whose trial k is another point.
bool same_point(const Run& a, const Run& b, const std::string& factor) {
  for (const std::string& k : metaparameter_keys()) {
    const auto x = a.numbers.find(k), y = b.numbers.find(k);
    if (k == factor || x == a.numbers.end() || y == b.numbers.end()) continue;
    if (!std::isnan(x->second) && !std::isnan(y->second) && x->second != y->second) return false;
  }
  return true;
}

Matched paired(const Runs& r, const Group& a, const Group& b, const std::string& metric, const std::string& factor) {
  std::map<Unit, std::pair<double, const Run*>> va, vb;
  const auto xa = metric_values(r, a.runs, metric), xb = metric_values(r, b.runs, metric);
  std::map<Unit, int> ca, cb;
  for (std::size_t i = 0; i < a.runs.size(); ++i) {
    const Unit u = unit_of(*a.runs[i]);
    ++ca[u], va[u] = {xa[i], a.runs[i]};
  }
  for (std::size_t i = 0; i < b.runs.size(); ++i) {
    const Unit u = unit_of(*b.runs[i]);
    ++cb[u], vb[u] = {xb[i], b.runs[i]};
  }
  Matched m;
  for (const auto& [unit, v] : va) {
    if (ca[unit] != 1 || !cb.count(unit) || cb[unit] != 1) continue;
    const auto& w = vb[unit];
    if (unit.trial >= 0 && !same_point(*v.second, *w.second, factor)) {
      ++m.other_points;
    } else if (!std::isnan(v.first) && !std::isnan(w.first)) {
      m.a.push_back(v.first);
      m.b.push_back(w.first);
    }
  }
  for (const auto& [unit, n] : ca) {  // a unit in one level only could not pair anyway
    if (cb.count(unit) && (n > 1 || cb[unit] > 1)) m.repeated.insert(unit);
  }
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
  for (const Group& g : group_runs(r, {o.factor}, Counted::every)) {
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
  const std::vector<LevelPair> pairs = level_pairs(levels, o.baseline, pw.notes, fam);
  std::vector<double> welch, mwu, pt, wx, eq, lr;
  std::vector<std::string> eq_ci;
  std::vector<std::vector<std::string>> rows;
  std::vector<std::size_t> npairs;
  for (const LevelPair& p : pairs) {
    const auto& a = values[p.a];
    const auto& b = values[p.b];
    const std::string what = fam + ", " + levels[p.a].key_values[0] + " vs " + levels[p.b].key_values[0];
    welch.push_back(p_or_nan([&] { return stats::welch_t(b, a); }, pw.notes, what + ", Welch"));
    if (goal) {
      lr.push_back(p_or_nan([&] { return stats::logrank({times[p.a], times[p.b]}); }, pw.notes, what + ", log-rank"));
    }
    mwu.push_back(p_or_nan([&] { return stats::mann_whitney_u(b, a); }, pw.notes, what + ", Mann-Whitney"));
    // Named, not a structured binding: C++17 lets no lambda capture one (GCC allows it, Clang before 16 not).
    const Matched matched = paired(fr, levels[p.a], levels[p.b], o.metric, o.factor);
    if (matched.other_points > 0) {
      pw.notes.push_back(what + ": " + std::to_string(matched.other_points) +
                         " trial(s) not paired: the two levels' runs of one seed and trial differ in their "
                         "metaparameters (a second search under the study's name?)");
    }
    const std::vector<double>& pa = matched.a;
    const std::vector<double>& pb = matched.b;
    npairs.push_back(pa.size());
    if (pa.size() < 2 && !matched.repeated.empty()) {
      const bool one = matched.repeated.size() == 1;
      pw.notes.push_back(what + ": no paired tests: " + units_text(matched.repeated) + (one ? " has" : " have") +
                         " several runs in a level (other keys pooled); a --within or --where on those keys "
                         "leaves one run per " +
                         (any_trial(matched.repeated) ? "seed and trial" : "seed"));
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
  const Counted counted = counted_for(o.metric, o.include_diverged);
  const std::vector<Group> all_levels = group_runs(r, {o.factor}, counted);
  Table omni, pw;
  omni.title = "omnibus tests of " + o.metric + " across " + o.factor;
  // F(df1, df2): Welch's ANOVA differs from the one-way ANOVA in its df2 alone, fractional.
  omni.headers = {"family", "test", "statistic", "df1", "df2", "p", ""};
  pw.title = "pairwise comparisons of " + o.metric + " (p adjusted by Holm within each family)";
  pw.headers = {"family",
                o.factor + " a",
                o.factor + " b",
                "n a",
                "n b",
                with_unit("mean b - a", unit),
                with_unit("95% CI of b - a", unit),
                "Hedges g [95% CI]",
                "Welch p",
                "Welch p Holm",
                "",
                "M-W U p Holm",
                "pairs",
                "paired t p Holm",
                "Wilcoxon p Holm"};
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
  for (const Group& family : group_runs(by_cell, o.within, counted)) {
    const std::string fam = label(o.within, family.key_values);
    const Runs fr = subset(by_cell, family.runs);
    std::vector<Group> levels = group_runs(fr, {o.factor}, counted);
    levels.erase(std::remove_if(levels.begin(), levels.end(), [](const Group& g) { return g.runs.empty(); }),
                 levels.end());
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
    omni.notes.push_back(
        "log-rank (Mantel 1966): every completed or beaten run of a level counts, one that never reached the "
        "goal as censored at its end (its " +
        std::string(metric_unit(r, o.metric) == "s" ? "wall_time_s" : "steps") +
        "); the other tests see only the runs that reached it");
  }
  if (tost) {
    pw.notes.push_back("equivalence: two one-sided Welch t-tests (Schuirmann 1987) that mean b - a lies within +/-" +
                       num(o.equivalence) + " " + unit + "; \"equivalent\" when their Holm-adjusted p < " +
                       num(o.alpha) + " (the " + tost_interval(o.alpha) +
                       " interval then lies inside the margin); \"not shown\" is no evidence of a difference");
  }
  // A note a fact: readers scan the lines under a table, and one 48-word line hid the second and third.
  pw.notes.push_back("marks: *** p < 0.001, ** < 0.01, * < 0.05 (Welch, Holm-adjusted)");
  if (std::find(r.columns.begin(), r.columns.end(), "trial") == r.columns.end()) {
    pw.notes.push_back("paired tests match runs by seed: one seed is one set of initial weights and sampler streams");
  } else {
    pw.notes.push_back(
        "paired tests match runs by seed and search trial: one seed is one set of initial weights and "
        "sampler streams, one trial one point of the search's metaparameters");
  }
  pw.notes.push_back("the 95% CI of b - a is Welch's, for each pair alone: it is not adjusted like the p-values");
  std::vector<std::string> held = o.within;
  held.push_back(o.factor);
  if (const std::string note = pooled_note(r, held); !note.empty()) omni.notes.push_back(note);
  if (const std::string note = goal_note(r, o.metric); !note.empty()) omni.notes.push_back(note);
  return {omni, pw};
}

}  // namespace dpstudy::analyze
