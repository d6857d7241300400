// dpstudy-analyze check-stats: this build's statistics against reference values.
//
// CTest stats_vs_scipy checks the statistics against scipy and statsmodels in
// the build tree. On a cluster node there is often no scipy, and the installed
// build may come from another compiler, Boost or optimisation level than the
// one tested. So the installed program carries the references itself: each
// value below is what scipy 1.10 or statsmodels 0.13 gives for the same data
// (tests/e2e/test_stats_vs_scipy.py recomputes them), and the command fails
// unless every statistic and p-value agrees to a relative 1e-6.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "commands.hpp"
#include "dpstudy/stats.hpp"

namespace dpstudy::analyze {

namespace {

using stats::Censored;

// Accuracies of three settings, 6 seeds each; distinct values and distinct
// paired differences, so that Mann-Whitney's and Wilcoxon's exact forms apply.
const std::vector<double> kA = {0.812, 0.827, 0.791, 0.848, 0.803, 0.819};
const std::vector<double> kB = {0.841, 0.862, 0.879, 0.822, 0.868, 0.855};
const std::vector<double> kC = {0.781, 0.806, 0.774, 0.818, 0.793, 0.788};
// Steps to a goal; false: the run never reached it (censored at its end).
const Censored kTimesA = {{200, 250, 300, 350, 400, 400}, {true, true, true, true, false, false}};
const Censored kTimesB = {{150, 150, 200, 250, 250, 400}, {true, true, true, true, true, false}};
// A search's best steps to a goal at five batch sizes, for the critical batch size.
const std::vector<double> kBatch = {16, 32, 64, 128, 256};
const std::vector<double> kBestSteps = {2050, 1100, 610, 360, 240};

struct Check {
  std::string name, quantity, reference_from;
  double value, reference;
};

std::vector<Check> checks() {
  const stats::Test welch = stats::welch_t(kA, kB);
  const stats::Test mw = stats::mann_whitney_u(kA, kB);
  const stats::Test paired = stats::paired_t(kA, kB);
  const stats::Test wx = stats::wilcoxon(kA, kB);
  const stats::Test f = stats::anova({kA, kB, kC});
  const stats::Test wf = stats::welch_anova({kA, kB, kC});
  const stats::Test kw = stats::kruskal({kA, kB, kC});
  const stats::Equivalence tost = stats::welch_tost(kA, kB, 0.05);
  const stats::Test lr = stats::logrank({kTimesA, kTimesB});
  const std::vector<double> holm = stats::holm({0.012, 0.041, 0.030});
  const stats::CriticalBatch cb = stats::critical_batch(kBatch, kBestSteps);
  return {
      {"Welch's t", "t", "scipy ttest_ind(equal_var=False)", welch.statistic, -3.2606731568639686},
      {"Welch's t", "p", "scipy ttest_ind(equal_var=False)", welch.p, 0.0085734918179537281},
      {"Mann-Whitney U, exact", "U", "scipy mannwhitneyu", mw.statistic, 3},
      {"Mann-Whitney U, exact", "p", "scipy mannwhitneyu", mw.p, 0.015151515151515152},
      {"paired t", "t", "scipy ttest_rel", paired.statistic, -2.4058437978896485},
      {"paired t", "p", "scipy ttest_rel", paired.p, 0.061177350853044973},
      {"Wilcoxon signed-rank, exact", "T", "scipy wilcoxon", wx.statistic, 1},
      {"Wilcoxon signed-rank, exact", "p", "scipy wilcoxon", wx.p, 0.0625},
      {"one-way ANOVA", "F", "scipy f_oneway", f.statistic, 15.993068722220496},
      {"one-way ANOVA", "p", "scipy f_oneway", f.p, 0.00019094634829878545},
      {"Welch's ANOVA", "F", "statsmodels anova_oneway(use_var=unequal)", wf.statistic, 15.460894194388802},
      {"Welch's ANOVA", "p", "statsmodels anova_oneway(use_var=unequal)", wf.p, 0.00090363683778016467},
      {"Kruskal-Wallis", "H", "scipy kruskal", kw.statistic, 11.68421052631578},
      {"Kruskal-Wallis", "p", "scipy kruskal", kw.p, 0.0029027251882677426},
      {"equivalence within 0.05", "p", "statsmodels ttost_ind(usevar=unequal)", tost.p, 0.15953501092624367},
      {"log-rank", "chi2", "statsmodels survdiff", lr.statistic, 1.5255401660317907},
      {"log-rank", "p", "statsmodels survdiff", lr.p, 0.21678302230836699},
      {"Holm", "p1", "statsmodels multipletests(method=holm)", holm.at(0), 0.036000000000000004},
      {"Holm", "p2", "statsmodels multipletests(method=holm)", holm.at(1), 0.059999999999999998},
      {"Holm", "p3", "statsmodels multipletests(method=holm)", holm.at(2), 0.059999999999999998},
      {"critical batch size", "B_crit", "statsmodels WLS", cb.b_crit, 264.05107046846405},
      {"critical batch size", "S_min", "statsmodels WLS", cb.s_min, 118.13149929450276},
      {"critical batch size", "95% low", "statsmodels WLS, Fieller", cb.low, 245.81539352085252},
      {"critical batch size", "95% high", "statsmodels WLS, Fieller", cb.high, 284.4386778496691},
  };
}

std::string g17(double x) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

}  // namespace

CheckedStats check_stats() {
  constexpr double kTolerance = 1e-6;
  CheckedStats out;
  Table t;
  t.title = "statistics of this build against scipy 1.10 and statsmodels 0.13 (relative tolerance 1e-6)";
  t.headers = {"check", "quantity", "dpstudy", "reference", "relative difference", "result", "reference from"};
  for (const Check& c : checks()) {
    const double rel = std::fabs(c.value - c.reference) / std::fmax(std::fabs(c.reference), 1e-300);
    const bool ok = rel <= kTolerance;  // NaN fails
    out.failed += ok ? 0 : 1;
    char diff[32];
    std::snprintf(diff, sizeof diff, "%.2g", rel);
    t.rows.push_back(
        {c.name, c.quantity, g17(c.value), g17(c.reference), diff, ok ? "ok" : "FAILED", c.reference_from});
  }
  t.notes.push_back(std::to_string(t.rows.size() - out.failed) + " of " + std::to_string(t.rows.size()) +
                    " values agree" + (out.failed ? "; this build's statistics are not to be trusted" : ""));
  out.tables.push_back(t);
  return out;
}

}  // namespace dpstudy::analyze
