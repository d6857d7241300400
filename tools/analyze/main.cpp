// dpstudy-analyze: summaries, significance tests, power, learning curves,
// steps-to-result and plots from study results. docs/analysis.md.
#include <boost/program_options.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "data.hpp"
#include "dpstudy/error.hpp"
#include "dpstudy/hdf5.hpp"
#include "dpstudy/metrics.hpp"
#include "dpstudy/stats.hpp"
#include "dpstudy/study.hpp"
#include "report.hpp"

namespace po = boost::program_options;
namespace fs = std::filesystem;
using namespace dpstudy;
using namespace dpstudy::analyze;

namespace {

struct Options {
  std::string command, metric = "final_test_accuracy", factor, baseline, format = "table", series = "test_accuracy",
                       x = "step", output, kind = "summary", throughput, interval = "ci95", style = "bars";
  std::vector<std::string> dirs, where, by, within, factors;
  bool include_diverged = false, log_x = false;
  double effect = 0, target = std::nan(""), alpha = 0.05, power = 0.8;
};

std::string num(double v, int digits = 4) {
  if (std::isnan(v)) return "-";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

std::string join(const std::vector<std::string>& items, const std::string& separator) {
  std::string s;
  for (const std::string& x : items) s += (s.empty() ? "" : separator) + x;
  return s;
}

std::string pval(double p) {
  if (std::isnan(p)) return "-";
  char buf[40];
  std::snprintf(buf, sizeof buf, p < 1e-4 ? "%.2e" : "%.4f", p);
  return buf;
}

std::string with_unit(const std::string& name, const std::string& unit) {
  return unit.empty() ? name : name + " (" + unit + ")";
}

std::string label(const std::vector<std::string>& keys, const std::vector<std::string>& values) {
  std::string s;
  for (std::size_t i = 0; i < keys.size(); ++i) s += (s.empty() ? "" : " ") + keys[i] + "=" + values[i];
  return s.empty() ? "all" : s;
}

// What the bars and bands of curves and plots show around the mean (--interval).
struct Interval {
  const char* name;
  const char* low_header;
  const char* high_header;
  const char* title;  // completes "mean and ..."
};
const std::vector<Interval> kIntervals{{"ci95", "ci95 low", "ci95 high", "95 % confidence interval"},
                                       {"sd", "mean - sd", "mean + sd", "+/- 1 standard deviation"},
                                       {"sem", "mean - sem", "mean + sem", "+/- 1 standard error"},
                                       {"range", "min", "max", "range (min to max)"},
                                       {"none", "", "", ""}};

const Interval& interval_named(const std::string& name) {
  for (const Interval& i : kIntervals) {
    if (name == i.name) return i;
  }
  throw ConfigError("interval", name, "is not one of: ci95, sd, sem, range, none");
}

// The interval's ends; the mean itself where it is undefined (n = 1 has no sd).
std::pair<double, double> interval_ends(const stats::Describe& d, const std::string& name) {
  double lo = d.mean, hi = d.mean;
  if (name == "ci95") lo = d.ci_low, hi = d.ci_high;
  if (name == "sd") lo = d.mean - d.sd, hi = d.mean + d.sd;
  if (name == "sem") lo = d.mean - d.sem, hi = d.mean + d.sem;
  if (name == "range") lo = d.min, hi = d.max;
  return {std::isnan(lo) ? d.mean : lo, std::isnan(hi) ? d.mean : hi};
}

// "mean and 95 % confidence interval", or "mean" alone with --interval none.
std::string mean_and(const Options& o) {
  const Interval& i = interval_named(o.interval);
  return std::string("mean") + (*i.title ? std::string(" and ") + i.title : "");
}

Runs subset(const Runs& all, const std::vector<const Run*>& runs) {
  Runs r;
  r.columns = all.columns;
  r.units = all.units;
  for (const Run* run : runs) r.runs.push_back(*run);
  return r;
}

// ---- summary ----
std::vector<Table> summary(const Runs& r, const Options& o) {
  const std::string unit = metric_unit(r, o.metric);
  Table t;
  t.title = "summary of " + o.metric + (o.include_diverged ? " (diverged runs included)" : "");
  t.headers = o.by;
  for (const char* h : {"n", "not completed"}) t.headers.push_back(h);
  for (const char* h : {"mean", "sd", "sem", "ci95 low", "ci95 high", "median", "min", "max"}) {
    t.headers.push_back(with_unit(h, unit));
  }
  for (const Group& g : group_runs(r, o.by, o.include_diverged)) {
    const stats::Describe d = stats::describe(finite(metric_values(r, g.runs, o.metric)));
    std::vector<std::string> row = g.key_values;
    row.push_back(std::to_string(d.n));
    row.push_back(std::to_string(g.not_completed));
    for (double v : {d.mean, d.sd, d.sem, d.ci_low, d.ci_high, d.median, d.min, d.max}) row.push_back(num(v));
    t.rows.push_back(row);
    const std::string name = label(o.by, g.key_values);
    if (d.n == 0 && !g.runs.empty()) {
      t.notes.push_back(name + ": no value of " + o.metric + " in its " + std::to_string(g.runs.size()) +
                        " completed run(s)");
    } else if (d.n == 0) {
      t.notes.push_back(name + ": no completed run (" + std::to_string(g.not_completed) + " diverged or failed)");
    }
    if (d.n == 1) t.notes.push_back(name + ": n = 1, no variance and no confidence interval");
    if (d.n > 1 && d.sd == 0) t.notes.push_back(name + ": every value is the same");
  }
  return {t};
}

// ---- compare and power ----
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

// Values of two levels matched by seed (runs with one value per seed in each).
std::pair<std::vector<double>, std::vector<double>> paired(const Runs& r, const Group& a, const Group& b,
                                                           const std::string& metric) {
  std::map<double, double> va, vb;
  const auto xa = metric_values(r, a.runs, metric), xb = metric_values(r, b.runs, metric);
  std::map<double, int> ca, cb;
  for (std::size_t i = 0; i < a.runs.size(); ++i) ++ca[a.runs[i]->numbers.at("seed")], va[a.runs[i]->numbers.at("seed")] = xa[i];
  for (std::size_t i = 0; i < b.runs.size(); ++i) ++cb[b.runs[i]->numbers.at("seed")], vb[b.runs[i]->numbers.at("seed")] = xb[i];
  std::vector<double> pa, pb;
  for (const auto& [seed, v] : va) {
    if (ca[seed] == 1 && cb.count(seed) && cb[seed] == 1 && !std::isnan(v) && !std::isnan(vb[seed])) {
      pa.push_back(v);
      pb.push_back(vb[seed]);
    }
  }
  return {pa, pb};
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

std::vector<Table> compare(const Runs& r, const Options& o) {
  if (o.factor.empty()) throw UsageError("compare needs --factor KEY");
  require_columns(r, {o.factor}, "--factor");
  check_baseline(r, o);
  const std::string unit = metric_unit(r, o.metric);
  const std::vector<Group> all_levels = group_runs(r, {o.factor}, false);
  Table omni, pw;
  omni.title = "omnibus tests of " + o.metric + " across " + o.factor;
  omni.headers = {"family", "test", "statistic", "df", "p", ""};
  pw.title = "pairwise comparisons of " + o.metric + " (p adjusted by Holm within each family)";
  pw.headers = {"family", o.factor + " a", o.factor + " b", "n a", "n b", with_unit("mean b - a", unit),
                "Hedges g [95% CI]", "Welch p", "Welch p Holm", "", "M-W U p Holm", "pairs", "paired t p Holm",
                "Wilcoxon p Holm"};
  for (const Group& family : group_runs(r, o.within, false)) {
    const std::string fam = label(o.within, family.key_values);
    const Runs fr = subset(r, family.runs);
    std::vector<Group> levels = group_runs(fr, {o.factor}, o.include_diverged);
    levels.erase(std::remove_if(levels.begin(), levels.end(), [](const Group& g) { return g.runs.empty(); }), levels.end());
    for (const Group& l : all_levels) {
      if (std::none_of(levels.begin(), levels.end(), [&](const Group& g) { return g.key_values == l.key_values; })) {
        pw.notes.push_back(fam + ": level " + o.factor + "=" + l.key_values[0] + " has no completed run here");
      }
    }
    std::vector<std::vector<double>> values;
    for (const Group& g : levels) values.push_back(finite(metric_values(fr, g.runs, o.metric)));
    if (levels.size() >= 2) {
      for (const auto& [name, fn] : std::vector<std::pair<std::string, stats::Test (*)(const std::vector<std::vector<double>>&)>>{
               {"one-way ANOVA", stats::anova}, {"Welch ANOVA", stats::welch_anova}, {"Kruskal-Wallis", stats::kruskal}}) {
        try {
          const stats::Test t = fn(values);
          omni.rows.push_back({fam, name, num(t.statistic), num(t.df), pval(t.p), stats::significance(t.p)});
        } catch (const UsageError& e) {
          omni.rows.push_back({fam, name, "-", "-", "-", "-"});
          omni.notes.push_back(fam + ", " + name + ": " + e.what());
        }
      }
    } else {
      omni.notes.push_back(fam + ": fewer than 2 levels of " + o.factor + " with completed runs");
    }
    const std::vector<Pair> pairs = pairs_of(levels, o.baseline, pw.notes, fam);
    std::vector<double> welch, mwu, pt, wx;
    std::vector<std::vector<std::string>> rows;
    std::vector<std::size_t> npairs;
    for (const Pair& p : pairs) {
      const auto& a = values[p.a];
      const auto& b = values[p.b];
      const std::string what = fam + ", " + levels[p.a].key_values[0] + " vs " + levels[p.b].key_values[0];
      welch.push_back(p_or_nan([&] { return stats::welch_t(b, a); }, pw.notes, what + ", Welch"));
      mwu.push_back(p_or_nan([&] { return stats::mann_whitney_u(b, a); }, pw.notes, what + ", Mann-Whitney"));
      const auto [pa, pb] = paired(fr, levels[p.a], levels[p.b], o.metric);
      npairs.push_back(pa.size());
      pt.push_back(pa.size() >= 2 ? p_or_nan([&] { return stats::paired_t(pb, pa); }, pw.notes, what + ", paired t")
                                  : std::nan(""));
      wx.push_back(pa.size() >= 2 ? p_or_nan([&] { return stats::wilcoxon(pb, pa); }, pw.notes, what + ", Wilcoxon")
                                  : std::nan(""));
      std::string g = "-";
      try {
        const stats::Effect e = stats::hedges_g(b, a);
        g = num(e.g, 3) + " [" + num(e.ci_low, 3) + ", " + num(e.ci_high, 3) + "]";
      } catch (const UsageError&) {
      }
      const double diff = (a.empty() || b.empty()) ? std::nan("") : stats::describe(b).mean - stats::describe(a).mean;
      rows.push_back({fam, levels[p.a].key_values[0], levels[p.b].key_values[0], std::to_string(a.size()),
                      std::to_string(b.size()), num(diff), g});
    }
    const auto hw = stats::holm(welch), hm = stats::holm(mwu), hp = stats::holm(pt), hx = stats::holm(wx);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      auto row = rows[i];
      for (const std::string& cell : {pval(welch[i]), pval(hw[i]), stats::significance(hw[i]), pval(hm[i]),
                                      std::to_string(npairs[i]), pval(hp[i]), pval(hx[i])}) {
        row.push_back(cell);
      }
      pw.rows.push_back(row);
    }
  }
  pw.notes.push_back("marks: *** p < 0.001, ** < 0.01, * < 0.05 (Welch, Holm-adjusted); paired tests match runs "
                     "by seed: the same seed means the same initial weights and sampler streams");
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
  for (const Group& family : group_runs(r, o.within, false)) {
    const std::string fam = label(o.within, family.key_values);
    const Runs fr = subset(r, family.runs);
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
  return {t};
}

std::vector<Table> power(const Runs& r, const Options& o) {
  if (o.factor.empty()) throw UsageError("power needs --factor KEY");
  require_columns(r, {o.factor}, "--factor");
  check_baseline(r, o);
  Table t;
  t.title = "power of Welch's t-test on " + o.metric + " at alpha " + num(o.alpha) + ", power " + num(o.power);
  const std::string unit = metric_unit(r, o.metric);
  t.headers = {"family", o.factor + " a", o.factor + " b", "n a", "n b", "detectable d", with_unit("detectable diff", unit)};
  if (o.effect > 0) t.headers.push_back("seeds per group for d=" + num(o.effect));
  for (const Group& family : group_runs(r, o.within, false)) {
    const std::string fam = label(o.within, family.key_values);
    const Runs fr = subset(r, family.runs);
    std::vector<Group> levels = group_runs(fr, {o.factor}, false);
    levels.erase(std::remove_if(levels.begin(), levels.end(), [](const Group& g) { return g.runs.empty(); }), levels.end());
    for (const Pair& p : pairs_of(levels, o.baseline, t.notes, fam)) {
      const auto a = finite(metric_values(fr, levels[p.a].runs, o.metric));
      const auto b = finite(metric_values(fr, levels[p.b].runs, o.metric));
      std::vector<std::string> row = {fam, levels[p.a].key_values[0], levels[p.b].key_values[0], std::to_string(a.size()),
                                      std::to_string(b.size())};
      try {
        const double d = stats::detectable_effect(std::int64_t(a.size()), std::int64_t(b.size()), o.alpha, o.power);
        const double sa = stats::describe(a).sd, sb = stats::describe(b).sd;
        const double sp = std::sqrt(((a.size() - 1) * sa * sa + (b.size() - 1) * sb * sb) / double(a.size() + b.size() - 2));
        row.push_back(num(d, 3));
        row.push_back(num(d * sp, 3));
      } catch (const UsageError& e) {
        row.push_back("-");
        row.push_back("-");
        t.notes.push_back(fam + ": " + e.what());
      }
      if (o.effect > 0) row.push_back(std::to_string(stats::samples_needed(o.effect, o.alpha, o.power)));
      t.rows.push_back(row);
    }
  }
  t.notes.push_back("d is Cohen's standardised difference; the detectable difference is d x the pooled sd");
  return {t};
}

// ---- curves and steps-to-result ----
struct Curve {
  std::vector<std::string> key_values;
  std::vector<double> x, mean, lo, hi;
  std::vector<std::int64_t> n;
};

std::vector<Curve> curves_of(const Runs& r, const Options& o) {
  if (o.x != "step" && o.x != "epoch" && o.x != "samples" && o.x != "time_s") {
    throw ConfigError("x", o.x, "is not one of: step, epoch, samples, time_s");
  }
  std::vector<Curve> out;
  for (const Group& g : group_runs(r, o.by, o.include_diverged)) {
    std::map<double, std::vector<double>> at;  // x -> values
    for (const Run* run : g.runs) {
      const auto y = series(*run, o.series);
      const auto steps = series(*run, "step");
      std::vector<double> x = o.x == "epoch" ? series(*run, "epoch") : steps;
      if (o.x == "samples") {
        for (auto& v : x) v *= run->numbers.at("workers") * run->numbers.at("batch_size");
      } else if (o.x == "time_s") {
        const auto t = series(*run, "time_s", true);
        for (auto& v : x) v = t.at(std::size_t(v) - 1);
      }
      for (std::size_t i = 0; i < y.size(); ++i) at[x[i]].push_back(y[i]);
    }
    Curve c{g.key_values, {}, {}, {}, {}, {}};
    for (const auto& [x, ys] : at) {
      const stats::Describe d = stats::describe(finite(ys));
      if (d.n == 0) continue;  // no run has a value here (e.g. test_every skipped the test split)
      c.x.push_back(x);
      const auto [lo, hi] = interval_ends(d, o.interval);
      c.mean.push_back(d.mean);
      c.lo.push_back(lo);
      c.hi.push_back(hi);
      c.n.push_back(d.n);
    }
    out.push_back(c);
  }
  return out;
}

std::vector<Table> curves(const Runs& r, const Options& o) {
  Table t;
  const std::string unit = metric_unit(r, o.series);
  const Interval& band = interval_named(o.interval);
  const bool ends = *band.low_header != '\0';
  t.title = "learning curves of " + o.series + " (" + mean_and(o) + " over runs) against " + o.x;
  t.headers = o.by;
  for (const std::string& h : {o.x, std::string("n"), with_unit("mean", unit)}) t.headers.push_back(h);
  if (ends) {
    t.headers.push_back(with_unit(band.low_header, unit));
    t.headers.push_back(with_unit(band.high_header, unit));
  }
  for (const Curve& c : curves_of(r, o)) {
    for (std::size_t i = 0; i < c.x.size(); ++i) {
      std::vector<std::string> row = c.key_values;
      for (const std::string& cell : {num(c.x[i], 8), std::to_string(c.n[i]), num(c.mean[i])}) row.push_back(cell);
      if (ends) {
        row.push_back(num(c.lo[i]));
        row.push_back(num(c.hi[i]));
      }
      t.rows.push_back(row);
    }
  }
  return {t};
}

struct Reach {
  std::vector<std::string> key_values;
  std::int64_t trials = 0, reached = 0;
  double best = std::nan(""), median = std::nan("");
  double best_lr = std::nan("");  // the learning rate of the best trial
};

// The regime of the step from one batch size to the next (docs/analysis.md):
// e = log(speed-up in steps) / log(batch ratio), 1 for perfect scaling.
std::string regime(double x0, double s0, double x1, double s1) {
  if (std::isnan(s0) || std::isnan(s1) || !(x1 > x0)) return "-";
  const double e = std::log(s0 / s1) / std::log(x1 / x0);
  if (e >= 0.8) return "perfect scaling";
  if (e <= 0.1) return "maximal data parallelism";
  return "diminishing returns";
}

std::vector<Reach> reach_of(const Runs& r, const Options& o) {
  if (std::isnan(o.target)) throw UsageError("steps-to-result needs --target VALUE (e.g. 0.9 for 90 % accuracy)");
  if (o.series.find("accuracy") != std::string::npos && !(o.target > 0 && o.target <= 1)) {
    throw ConfigError("target", num(o.target), "must be in (0, 1]: " + o.series + " is a fraction (0.9 for 90 %)");
  }
  const bool lower_is_better = o.series.find("loss") != std::string::npos;
  std::vector<Reach> out;
  for (const Group& g : group_runs(r, o.by, true)) {
    Reach rc{g.key_values, 0, 0, std::nan(""), std::nan("")};
    std::vector<double> steps;
    for (const Run* run : g.runs) {
      ++rc.trials;
      if (!run->completed()) continue;  // diverged: infeasible
      const auto y = series(*run, o.series);
      const auto s = series(*run, "step");
      const std::vector<std::int64_t> step_numbers(s.begin(), s.end());
      const std::int64_t first = first_reaching(step_numbers, y, o.target, lower_is_better);
      if (first < 0) continue;
      steps.push_back(double(first));
      if (std::isnan(rc.best) || double(first) < rc.best) {
        rc.best = double(first);
        const auto lr = run->numbers.find("lr");
        rc.best_lr = lr == run->numbers.end() ? std::nan("") : lr->second;
      }
    }
    rc.reached = std::int64_t(steps.size());
    if (!steps.empty()) rc.median = stats::describe(steps).median;
    out.push_back(rc);
  }
  return out;
}

// Training steps per second per sweep point, from a throughput mode table
// (<study>/throughput.h5, docs/performance.md): the rows of one group are those
// whose columns equal the group's --by values and the --where values they have.
struct Speed {
  std::vector<std::string> benchmark;
  std::map<std::string, std::vector<std::string>> columns;  // as text, to compare with index values
  std::vector<double> steps_per_s;
  std::vector<std::string> run_type, aggregate;
};

Speed read_speed(const std::string& path) {
  const h5::File f = h5::File::open_read(path);
  if (!f.root().has("throughput")) throw DataError(path, "no /throughput group (it is written by --mode throughput)");
  const h5::Group t = f.root().open_group("throughput");
  Speed s;
  s.benchmark = t.read_strings("benchmark");
  s.steps_per_s = t.read_doubles("steps_per_s");
  s.run_type = t.read_strings("run_type");
  s.aggregate = t.read_strings("aggregate");
  for (const std::string& name : t.members()) {
    std::vector<std::string> text;
    const char kind = t.dataset_kind(name);
    if (kind == 's') {
      text = t.read_strings(name);
    } else if (kind == 'i') {
      for (const auto v : t.read_ints(name)) text.push_back(std::to_string(v));
    } else {
      for (const auto v : t.read_doubles(name)) text.push_back(num(v, 17));
    }
    s.columns[name] = std::move(text);
  }
  return s;
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

std::vector<Table> steps_to_result(const Runs& r, const Options& o) {
  const std::vector<Reach> reach = reach_of(r, o);
  Speed speed;
  if (!o.throughput.empty()) speed = read_speed(o.throughput);
  Table t;
  t.title = "steps to " + o.series + (o.series.find("loss") != std::string::npos ? " <= " : " >= ") + num(o.target) +
            " (first evaluated step; Shallue et al. 2018)";
  t.headers = o.by;
  for (const char* h : {"trials", "reached", "fraction", "best (steps)", "median (steps)"}) t.headers.push_back(h);
  const bool scaling = o.by.size() == 1;
  double x0 = std::nan(""), s0 = std::nan("");
  if (!o.throughput.empty()) {
    for (const char* h : {"steps/s", "est. time to result (s)"}) t.headers.push_back(h);
  }
  if (scaling) {
    for (const char* h : {"log2 x", "log2 best", "perfect scaling (steps)", "regime", "best trial lr"}) {
      t.headers.push_back(h);
    }
    for (const Reach& rc : reach) {
      if (!std::isnan(rc.best)) {
        x0 = std::strtod(rc.key_values[0].c_str(), nullptr);
        s0 = rc.best;
        break;
      }
    }
  }
  double prev_x = std::nan(""), prev_s = std::nan("");
  for (const Reach& rc : reach) {
    std::vector<std::string> row = rc.key_values;
    for (const std::string& cell : {std::to_string(rc.trials), std::to_string(rc.reached),
                                    num(rc.trials ? double(rc.reached) / double(rc.trials) : std::nan("")),
                                    num(rc.best, 8), num(rc.median, 8)}) {
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
    if (scaling) {
      const double x = std::strtod(rc.key_values[0].c_str(), nullptr);
      row.push_back(num(std::log2(x)));
      row.push_back(num(std::log2(rc.best)));
      row.push_back(num(s0 * x0 / x, 6));
      row.push_back(regime(prev_x, prev_s, x, rc.best));
      row.push_back(num(rc.best_lr));
      prev_x = x;
      prev_s = rc.best;
    }
    t.rows.push_back(row);
  }
  if (!o.throughput.empty()) {
    t.notes.push_back("est. time to result = best steps / steps per second measured by --mode throughput (" +
                      o.throughput + "); evaluation time not included");
  }
  if (scaling) {
    t.notes.push_back("perfect scaling: steps halve when " + o.by[0] + " doubles, from the first group that reaches the target");
    t.notes.push_back("regime of the step from the previous " + o.by[0] + ": e = log(steps ratio) / log(" + o.by[0] +
                      " ratio); perfect scaling e >= 0.8, maximal data parallelism e <= 0.1, diminishing returns between");
  }
  return {t};
}

// ---- plot ----
// A gnuplot title expression: the text, and under it the --where filters, so a
// figure that shows a slice of a study says which.
std::string plot_title(const std::string& text, const Options& o) {
  const auto quoted = [](const std::string& x) {  // gnuplot's single quotes: '' is a quote
    std::string q = "'";
    for (char c : x) q += c == '\'' ? std::string("''") : std::string(1, c);
    return q + "'";
  };
  std::string t = quoted(text);
  if (!o.where.empty()) t += ".\"\\n\"." + quoted(join(o.where, ", "));
  return t + " noenhanced";
}

void plot(const Runs& r, const Options& o) {
  if (o.output.empty()) throw UsageError("plot needs --output FILE.png or FILE.svg");
  const std::string term = terminal_for(o.output);
  std::ostringstream data, script;
  script << "set terminal " << term << "\nset grid\nset key outside right top\n";
  if (o.kind == "summary") {
    if (o.by.empty() || o.by.size() > 2) throw UsageError("plot --kind summary needs --by X or --by X,LINES");
    std::vector<std::string> lines_keys(o.by.begin() + 1, o.by.end());
    std::vector<std::string> plots;
    std::set<std::string> off_axis;  // x values that are not numbers (sync_period=never)
    int block = 0;
    for (const Group& line : group_runs(r, lines_keys, o.include_diverged)) {
      const Runs lr = subset(r, line.runs);
      for (const Group& g : group_runs(lr, {o.by[0]}, o.include_diverged)) {
        char* end = nullptr;
        std::strtod(g.key_values[0].c_str(), &end);
        if (g.key_values[0].empty() || *end != '\0') {
          off_axis.insert(g.key_values[0]);
          continue;
        }
        if (o.log_x && !(std::strtod(g.key_values[0].c_str(), nullptr) > 0)) {
          throw UsageError("plot --log_x: " + o.by[0] + " = " + g.key_values[0] +
                           " cannot be placed on a logarithmic axis (values must be > 0); leave it out with --where " +
                           o.by[0] + ">0");
        }
        const stats::Describe d = stats::describe(finite(metric_values(r, g.runs, o.metric)));
        if (d.n == 0) continue;
        const auto [lo, hi] = interval_ends(d, o.interval);
        data << g.key_values[0] << " " << format_number(d.mean) << " " << format_number(lo) << " " << format_number(hi)
             << "\n";
      }
      data << "\n\n";
      const std::string index = "datafile index " + std::to_string(block) + " ", colour = " lc " + std::to_string(block + 1);
      const std::string title = " title '" + (lines_keys.empty() ? o.metric : label(lines_keys, line.key_values)) + "'";
      if (o.interval == "none") {
        plots.push_back(index + "using 1:2 with linespoints lw 2 pt 7" + colour + title);
      } else if (o.style == "band") {
        plots.push_back(index + "using 1:3:4 with filledcurves fs transparent solid 0.2" + colour + " notitle");
        plots.push_back(index + "using 1:2 with linespoints lw 2 pt 7" + colour + title);
      } else {
        plots.push_back(index + "using 1:2:3:4 with yerrorlines lw 2 pt 7" + colour + title);
      }
      ++block;
    }
    script << "set xlabel '" << with_unit(o.by[0], metric_unit(r, o.by[0])) << "'\nset ylabel '" << with_unit(o.metric, metric_unit(r, o.metric))
           << "'\nset title " << plot_title(o.metric + ": " + mean_and(o) + " over seeds", o) << "\n"
           << "set offsets graph 0.05, graph 0.05, 0, 0\nset xlabel noenhanced\nset ylabel noenhanced\nset key noenhanced\n";
    if (o.log_x) script << "set logscale x 10\n";
    if (data.str().find_first_not_of("\n") == std::string::npos && !off_axis.empty()) {
      std::string values;
      for (const std::string& x : off_axis) values += (values.empty() ? "" : ", ") + x;
      throw UsageError("plot --kind summary: the first --by key, " + o.by[0] + ", has no numeric value (" + values +
                       ") to place on the x axis; put a numeric key first, e.g. --by overlap," + o.by[0]);
    }
    script << "plot ";
    for (std::size_t i = 0; i < plots.size(); ++i) script << (i ? ", \\\n     " : "") << plots[i];
    for (const std::string& x : off_axis) {
      std::printf("# %s=%s has no place on a numeric axis: left out of the plot (see summary)\n", o.by[0].c_str(),
                  x.c_str());
    }
  } else if (o.kind == "curves") {
    int block = 0;
    std::vector<std::string> plots;
    for (const Curve& c : curves_of(r, o)) {
      for (std::size_t i = 0; i < c.x.size(); ++i) {
        data << format_number(c.x[i]) << " " << format_number(c.mean[i]) << " " << format_number(c.lo[i]) << " "
             << format_number(c.hi[i]) << "\n";
      }
      data << "\n\n";
      const std::string title = label(o.by, c.key_values);
      if (o.interval != "none") {
        plots.push_back("datafile index " + std::to_string(block) + " using 1:3:4 with filledcurves fs transparent solid 0.2 lc " +
                        std::to_string(block + 1) + " notitle");
      }
      plots.push_back("datafile index " + std::to_string(block) + " using 1:2 with linespoints lw 2 pt 7 lc " + std::to_string(block + 1) +
                      " title '" + title + "'");
      ++block;
    }
    script << "set xlabel '" << with_unit(o.x, metric_unit(r, o.x)) << "' noenhanced\nset ylabel '"
           << with_unit(o.series, metric_unit(r, o.series)) << "' noenhanced\nset key noenhanced\n"
           << "set title " << plot_title("learning curves: " + mean_and(o) + " over seeds", o) << "\nplot ";
    for (std::size_t i = 0; i < plots.size(); ++i) script << (i ? ", \\\n     " : "") << plots[i];
  } else if (o.kind == "steps") {
    const std::vector<Reach> reach = reach_of(r, o);
    if (o.by.size() != 1) throw UsageError("plot --kind steps needs one --by key (e.g. batch_size)");
    double x0 = std::nan(""), s0 = std::nan(""), px = std::nan(""), ps = std::nan("");
    for (const Reach& rc : reach) {
      if (std::isnan(rc.best)) continue;
      const double x = std::strtod(rc.key_values[0].c_str(), nullptr);
      if (std::isnan(x0)) x0 = x, s0 = rc.best;
      const std::string label_text = regime(px, ps, x, rc.best);
      data << format_number(x) << " " << format_number(rc.best) << " " << format_number(s0 * x0 / x) << " "
           << (label_text == "-" ? "\"\"" : "\"" + label_text + "\"") << "\n";
      px = x;
      ps = rc.best;
    }
    script << "set logscale xy 2\nset xlabel '" << with_unit(o.by[0], metric_unit(r, o.by[0])) << "' noenhanced\nset ylabel 'steps to " << o.series
           << " " << num(o.target) << " (steps)' noenhanced\nset title " << plot_title("steps to result", o) << "\n"
           << "plot datafile using 1:2 with linespoints lw 2 pt 7 title 'best trial', "
           << "datafile using 1:3 with lines dt 2 lw 2 title 'perfect scaling', "
           << "datafile using 1:2:4 with labels noenhanced offset 0,1.2 font ',9' notitle";
  } else if (o.kind == "best_lr") {
    const std::vector<Reach> reach = reach_of(r, o);
    if (o.by.size() != 1) throw UsageError("plot --kind best_lr needs one --by key (e.g. batch_size)");
    double x0 = std::nan(""), l0 = std::nan("");
    for (const Reach& rc : reach) {
      if (std::isnan(rc.best_lr)) continue;
      const double x = std::strtod(rc.key_values[0].c_str(), nullptr);
      if (std::isnan(x0)) x0 = x, l0 = rc.best_lr;
      data << format_number(x) << " " << format_number(rc.best_lr) << " " << format_number(l0 * x / x0) << " "
           << format_number(l0 * std::sqrt(x / x0)) << "\n";
    }
    script << "set logscale xy 2\nset xlabel '" << with_unit(o.by[0], metric_unit(r, o.by[0])) << "' noenhanced\n"
           << "set ylabel 'learning rate of the best trial' noenhanced\nset title " << plot_title("best learning rate", o) << "\n"
           << "plot datafile using 1:2 with linespoints lw 2 pt 7 title 'best trial', "
           << "datafile using 1:3 with lines dt 2 lw 2 title 'linear rule', "
           << "datafile using 1:4 with lines dt 3 lw 2 title 'square-root rule'";
  } else {
    throw ConfigError("kind", o.kind, "is not one of: summary, curves, steps, best_lr");
  }
  script << "\n";
  run_gnuplot(script.str(), data.str(), o.output);
  std::printf("wrote %s\n", o.output.c_str());
}

// One document for a study: the summary by the --by keys, their factorial
// ANOVA, the comparisons of --factor and the figures, each with the command
// that makes it on its own.
void report(const Runs& r, const Options& o) {
  if (o.output.empty()) throw UsageError("report needs --output FOLDER (report.md and its figures go there)");
  if (o.by.empty() || o.by.size() > 4) {
    throw UsageError("report needs --by K1[,K2,...]: 1 to 4 keys to group by (the first is its figures' x axis)");
  }
  require_columns(r, o.by, "--by");
  std::error_code ec;
  fs::create_directories(o.output, ec);
  const std::string path = (fs::path(o.output) / "report.md").string();
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> md(std::fopen(path.c_str(), "w"), std::fclose);
  if (!md) throw ConfigError("output", o.output, "cannot be written (" + path + ")");
  std::FILE* out = md.get();

  std::string by = join(o.by, ","), dirs = join(o.dirs, " "), filters;
  for (const std::string& w : o.where) filters += " --where '" + w + "'";
  const std::string common = dirs + filters + (o.metric == "final_test_accuracy" ? "" : " --metric " + o.metric);
  const auto section = [&](const std::string& title, const std::string& command) {
    std::fprintf(out, "## %s\n\n```sh\ndpstudy-analyze %s\n```\n\n", title.c_str(), command.c_str());
  };
  std::set<std::string> studies;
  std::map<std::string, int> status;
  for (const Run& run : r.runs) {
    studies.insert(run.text("study").value_or("?"));
    ++status[run.text("status").value_or("?")];
  }
  std::string counts;
  for (const auto& [s, n] : status) counts += (counts.empty() ? "" : ", ") + std::to_string(n) + " " + s;
  std::fprintf(out, "# %s\n\n%zu runs (%s) from %s%s. Metric: %s. Made by dpstudy-analyze report.\n\n",
               join(std::vector<std::string>(studies.begin(), studies.end()), ", ").c_str(), r.runs.size(),
               counts.c_str(), dirs.c_str(), filters.empty() ? "" : (", runs kept by" + filters).c_str(),
               o.metric.c_str());

  section("Summary", "summary " + common + " --by " + by);
  print(summary(r, o), Format::markdown, out);
  if (o.by.size() >= 2) {
    Options a = o;
    a.factors = o.by;
    section("Factorial ANOVA", "anova " + common + " --factors " + by);
    print(anova(r, a), Format::markdown, out);
  }
  if (!o.factor.empty()) {
    Options c = o;
    if (c.within.empty()) {  // the other --by keys: one family per combination of them
      for (const std::string& k : o.by) {
        if (k != o.factor) c.within.push_back(k);
      }
    }
    section("Comparisons of " + o.factor,
            "compare " + common + " --factor " + o.factor + (c.within.empty() ? "" : " --within " + join(c.within, ",")));
    print(compare(r, c), Format::markdown, out);
  }
  std::fprintf(out, "## Figures\n\n");
  const auto figure = [&](const std::string& kind, const std::vector<std::string>& keys, const std::string& file) {
    Options f = o;
    f.kind = kind;
    f.by = keys;
    f.output = (fs::path(o.output) / file).string();
    std::fprintf(out, "```sh\ndpstudy-analyze plot --kind %s %s --by %s --output %s\n```\n\n", kind.c_str(),
                 common.c_str(), join(keys, ",").c_str(), file.c_str());
    try {
      plot(r, f);
      std::fprintf(out, "![%s by %s](%s)\n\n", kind.c_str(), join(keys, ", ").c_str(), file.c_str());
    } catch (const std::exception& e) {
      std::fprintf(out, "(no figure: %s)\n\n", e.what());
    }
  };
  if (o.by.size() > 2) {
    std::fprintf(out, "The figures show the first --by keys; each point pools the runs of every level of %s "
                      "(add --where to draw one slice).\n\n",
                 join(std::vector<std::string>(o.by.begin() + 2, o.by.end()), ", ").c_str());
  }
  figure("summary", std::vector<std::string>(o.by.begin(), o.by.begin() + std::min<std::size_t>(2, o.by.size())),
         "summary.png");
  figure("curves", {o.by[0]}, "curves.png");
  std::printf("wrote %s\n", path.c_str());
}

const char* kUsage = R"(usage: dpstudy-analyze COMMAND STUDY_DIR... [options]

commands:
  summary          --by K1,K2 [--metric M]: n, mean, sd, sem, 95 % t interval, median, min, max per group
  compare          --factor K [--within K1,K2] [--baseline LEVEL] [--metric M]: ANOVA, Welch ANOVA,
                   Kruskal-Wallis; Welch t, Mann-Whitney U, paired t and Wilcoxon (by seed), Holm, Hedges' g
  anova            --factors K1,K2 [--within K] [--metric M]: factorial ANOVA (Type II): main effects and
                   interactions (does K1's effect depend on K2?), F, p, partial eta squared
  power            --factor K [--within ...] [--baseline L] [--effect D]: detectable effect, seeds needed
  curves           [--by K] [--series S] [--x step|epoch|samples|time_s] [--interval I]: mean curves with bands
  steps-to-result  --target T [--by batch_size] [--series S] [--throughput F]: first evaluated step reaching T
  report           --by K1,K2 [--factor F] --output FOLDER: report.md with the summary, the factorial ANOVA,
                   the comparisons of F and the figures, each with its command
  plot             --kind summary|curves|steps|best_lr --output FILE.png|svg (and the options of that command)

metrics: any numeric index column (final_test_accuracy, best_test_accuracy, wall_time_s, ...), an
eval series at a point: test_accuracy@epoch=1, test_loss@step=200, or the mean of its last K
evaluations: test_accuracy@last=5, or of the last K evaluations of the model every worker held
(eval_at_sync): test_accuracy@synced_last=2. Diverged runs are counted and
excluded unless --include_diverged.
)";

}  // namespace

int main(int argc, char** argv) {
  try {
    Options o;
    std::string by, within, factors;
    po::options_description named("options");
    named.add_options()("help,h", "show usage")("by", po::value(&by), "grouping keys, comma-separated")(
        "metric", po::value(&o.metric)->default_value(o.metric), "metric to analyse")(
        "where", po::value(&o.where)->composing(),
        "keep runs with KEY=VALUE, or KEY!=VALUE, KEY<VALUE, <=, >, >= (repeatable)")(
        "factor", po::value(&o.factor), "compare / power: the factor whose levels are compared")(
        "within", po::value(&within), "compare / power / anova: one family of tests per combination of these keys")(
        "factors", po::value(&factors), "anova: the factors, comma-separated (2 to 4)")(
        "baseline", po::value(&o.baseline), "compare / power: compare every level with this one only")(
        "include_diverged", po::bool_switch(&o.include_diverged), "keep diverged and failed runs")(
        "log_x", po::bool_switch(&o.log_x), "plot --kind summary: a logarithmic x axis (the key's values must be > 0)")(
        "format", po::value(&o.format)->default_value(o.format), "table, markdown, csv or json")(
        "effect", po::value(&o.effect), "power: seeds needed to detect this standardised effect d")(
        "alpha", po::value(&o.alpha)->default_value(0.05, "0.05"), "power: significance level")(
        "power", po::value(&o.power)->default_value(0.8, "0.8"), "power: required power")(
        "series", po::value(&o.series)->default_value(o.series), "curves / steps-to-result: eval series")(
        "x", po::value(&o.x)->default_value(o.x), "curves: step, epoch, samples or time_s")(
        "target", po::value(&o.target), "steps-to-result: the goal value of the series")(
        "throughput", po::value(&o.throughput),
        "steps-to-result: a throughput.h5 of --mode throughput; adds steps/s and the estimated time to result")(
        "kind", po::value(&o.kind)->default_value(o.kind), "plot: summary, curves, steps or best_lr")(
        "interval", po::value(&o.interval)->default_value(o.interval),
        "curves, plot summary|curves: what the bars and bands show: ci95 (95 % t interval of the mean), sd "
        "(+/- 1 standard deviation), sem, range (min to max) or none")(
        "style", po::value(&o.style)->default_value(o.style), "plot --kind summary: bars (error bars) or band (shaded)")(
        "output", po::value(&o.output), "plot: the PNG or SVG file to write; report: the folder");
    po::options_description hidden;
    hidden.add_options()("command", po::value(&o.command))("dirs", po::value(&o.dirs));
    po::positional_options_description pos;
    pos.add("command", 1).add("dirs", -1);
    po::options_description all;
    all.add(named).add(hidden);
    po::variables_map vm;
    po::store(po::command_line_parser(argc, argv).options(all).positional(pos).run(), vm);
    po::notify(vm);
    if (vm.count("help") || o.command.empty()) {
      std::cout << kUsage << "\n" << named;
      return o.command.empty() && !vm.count("help") ? 2 : 0;
    }
    if (vm.count("effect") && !(o.effect > 0 && std::isfinite(o.effect))) {
      throw ConfigError("effect", num(o.effect), "must be a standardised effect d > 0, e.g. 0.5");
    }
    if (!(o.alpha > 0 && o.alpha < 1)) throw ConfigError("alpha", num(o.alpha), "must be in (0, 1)");
    if (!(o.power > 0 && o.power < 1)) throw ConfigError("power", num(o.power), "must be in (0, 1)");
    o.by = split_list(by);
    o.within = split_list(within);
    o.factors = split_list(factors);
    const Format format = parse_format(o.format);
    interval_named(o.interval);  // both refused before the results are read
    if (o.style != "bars" && o.style != "band") throw ConfigError("style", o.style, "is not one of: bars, band");
    if (o.command == "steps-to-result" && o.by.empty()) o.by = {"batch_size"};
    Runs r = load_studies(o.dirs);
    apply_where(r, o.where);
    if (o.command == "summary") {
      print(summary(r, o), format);
    } else if (o.command == "compare") {
      print(compare(r, o), format);
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
    } else if (o.command == "plot") {
      if ((o.kind == "steps" || o.kind == "best_lr") && o.by.empty()) o.by = {"batch_size"};
      plot(r, o);
    } else {
      throw UsageError("unknown command '" + o.command + "'; see dpstudy-analyze --help");
    }
    return 0;
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
