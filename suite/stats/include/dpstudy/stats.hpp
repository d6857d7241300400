// Statistics for comparing study groups. Distributions come from Boost.Math;
// conventions follow scipy.stats 1.10 (two-sided p-values), which a CTest test
// checks to a relative 1e-6. Formulas: docs/analysis.md.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace dpstudy::stats {

struct Describe {
  std::int64_t n = 0;
  double mean, sd, sem, ci_low, ci_high, median, min, max;  // NaN where undefined (sd for n < 2)
};
Describe describe(const std::vector<double>& x, double confidence = 0.95);

struct Test {
  // df: the t or chi-squared test's, or an F test's numerator df; df2: an F
  // test's denominator df (Welch's ANOVA: fractional). NaN where they do not apply.
  double statistic, df, p, df2;
};

// scipy.stats.ttest_ind(a, b, equal_var=False)
Test welch_t(const std::vector<double>& a, const std::vector<double>& b);
// mean(a) - mean(b) and its Welch interval at `confidence`: diff -/+ t(df)
// se, Welch-Satterthwaite df (later SciPy's ttest_ind(a, b, equal_var=False)
// .confidence_interval()); zero width when both groups are constant.
struct DiffInterval {
  double diff, low, high, df;
};
DiffInterval welch_interval(const std::vector<double>& a, const std::vector<double>& b, double confidence = 0.95);
// Equivalence of two means within +/- margin (Schuirmann's two one-sided
// tests, with Welch's standard error and df; statsmodels' ttost_ind(a, b,
// -margin, margin, usevar="unequal")): p is the larger of the two one-sided
// p-values, so p < alpha shows mean(a) - mean(b) to lie within the margin,
// as its 1 - 2 alpha interval then does.
struct Equivalence {
  // diff = mean(a) - mean(b) and its 1 - 2 alpha interval, which lies inside +/-margin exactly when p < alpha;
  // p NaN when both groups are constant
  double diff, ci_low, ci_high, df, p;
};
Equivalence welch_tost(const std::vector<double>& a, const std::vector<double>& b, double margin, double alpha = 0.05);
// scipy.stats.ttest_rel(a, b)
Test paired_t(const std::vector<double>& a, const std::vector<double>& b);
// scipy.stats.mannwhitneyu(a, b): U of a; exact when min(n) <= 8 and no ties,
// else normal approximation with tie and continuity correction.
Test mann_whitney_u(const std::vector<double>& a, const std::vector<double>& b);
// scipy.stats.wilcoxon(a, b): zeros dropped, T = min(W+, W-); exact for n <= 50
// without zeros, else normal approximation with tie correction.
Test wilcoxon(const std::vector<double>& a, const std::vector<double>& b);
// scipy.stats.f_oneway(*groups)
Test anova(const std::vector<std::vector<double>>& groups);
// Welch's heteroscedastic one-way ANOVA (Welch 1951).
Test welch_anova(const std::vector<std::vector<double>>& groups);
// scipy.stats.kruskal(*groups), tie-corrected H.
Test kruskal(const std::vector<std::vector<double>>& groups);
// Times to an event (a run reaching its goal), some censored: the event not
// seen by then (a run that ended without reaching it).
struct Censored {
  std::vector<double> time;
  std::vector<bool> event;  // false: censored at time
};
// The log-rank test (Mantel-Haenszel) that k groups share one distribution of
// times to the event: chi-squared(k - 1); statsmodels' survdiff(time, status,
// group). A censored observation is at risk at its own time. UsageError when
// no group has an event, or a group no observation.
Test logrank(const std::vector<Censored>& groups);
// The Kaplan-Meier estimate of the survival function S(t) (the fraction not yet
// at the event) at each distinct event time, ascending; statsmodels'
// SurvfuncRight(time, status).surv_times and .surv_prob.
// se: Greenwood's standard error of S(t) (surv_prob_se; NaN from a time at
// which every observation at risk has the event).
struct Survival {
  std::vector<double> time, survival, se;
};
Survival kaplan_meier(const Censored& group);
// The pointwise `confidence` interval of S(t) at each time of `km`, on the
// log(-log) scale with Greenwood's variance: R's survfit(conf.type =
// "log-log"). Where S is 1 or 0, or its variance undefined, both ends are S.
struct SurvivalBand {
  std::vector<double> low, high;
};
SurvivalBand km_band(const Survival& km, double confidence = 0.95);
// The time by which a fraction p of the group has had the event, from the
// Kaplan-Meier estimate: the first event time with S(t) < 1 - p, or where S is
// flat at exactly 1 - p the midpoint of the flat, as R's quantile.survfit (NaN
// when S never falls below 1 - p, and where the flat lasts to the end, whose
// midpoint R takes to the last censored time); with the confidence interval of
// Brookmeyer and Crowley (1982) on the complementary log-log scale: from the
// first event time at which S(t) = 1 - p is not rejected to the event time after
// the last one (infinity when that is the last): statsmodels' SurvfuncRight
// quantile_ci(p, alpha, "cloglog"), as SAS's LIFETEST.
struct SurvivalQuantile {
  double value, low, high;
};
SurvivalQuantile km_quantile(const Censored& group, double p, double confidence = 0.95);
// Factorial ANOVA: a linear model of every main effect and interaction of k
// categorical factors, with Type II sums of squares (each term adjusted for
// every term that does not contain it; R's car::Anova, statsmodels'
// anova_lm(typ=2)). levels[f][i] is observation i's level (any integer) in
// factor f. Empty cells are allowed: a term they leave inestimable gets df 0.
struct AnovaTerm {
  std::vector<int> factors;  // which factors, ascending: {0} a main effect, {0, 1} their interaction
  double ss, df, f, p;       // F and p against the residual; NaN where undefined
  double partial_eta_sq;     // ss / (ss + residual ss)
};
struct FactorialAnova {
  std::vector<AnovaTerm> terms;  // main effects, then two-way interactions, ...
  double residual_ss, residual_df;
};
FactorialAnova factorial_anova(const std::vector<double>& y, const std::vector<std::vector<int>>& levels);

// Fieller's (1954) interval of a ratio num / den of two estimates with variances
// var_num and var_den, covariance cov and a t of df degrees of freedom: the
// ratios r where (num - r den)^2 <= t^2 Var(num - r den). (-inf, inf) where den
// is within its own interval of 0, and the set is unbounded.
struct RatioInterval {
  double low, high;
};
RatioInterval fieller_interval(double num, double den, double var_num, double var_den, double cov, double df,
                               double confidence = 0.95);

// The critical batch size of McCandlish et al. (2018): steps = S_min (1 + B_crit / B),
// fitted to (batch, steps) as the line steps = a + b / B by least squares of the
// relative error (weights 1 / steps^2): S_min = a, B_crit = b / a. Its interval
// is Fieller's for b / a with the residuals' variance (n - 2 df): the points'
// scatter about the curve, not the noise of the steps themselves. NaN and
// `why_not` where there is no fit: fewer than 3 points, or a or b not positive.
struct CriticalBatch {
  double b_crit, s_min, low, high, df;
  std::string why_not;
};
CriticalBatch critical_batch(const std::vector<double>& batch, const std::vector<double>& steps,
                             double confidence = 0.95);

// Holm-Bonferroni adjusted p-values, in the input order.
std::vector<double> holm(const std::vector<double>& p);

struct Effect {
  double g, ci_low, ci_high;
};
// Hedges' g (bias-corrected standardised mean difference a - b) with an
// approximate normal confidence interval.
Effect hedges_g(const std::vector<double>& a, const std::vector<double>& b, double confidence = 0.95);

// Two-sided two-sample t-test power for standardised effect d (non-central t).
double power_two_sample(double d, std::int64_t n1, std::int64_t n2, double alpha = 0.05);
// The smallest d detectable with `power` at `alpha` with n1 and n2 samples.
double detectable_effect(std::int64_t n1, std::int64_t n2, double alpha = 0.05, double power = 0.8);
// Samples per group needed to detect d with `power` at `alpha`.
std::int64_t samples_needed(double d, double alpha = 0.05, double power = 0.8);
// Power of the equivalence test (Welch's two one-sided tests at `alpha`, n per
// group) to show |difference| < m (the margin over the sd) when the true
// difference is 0, exact (numerical integration over the variances and Welch's
// df, stats_effects.cpp); and the n per group it needs (-1: over 10^7).
double tost_power(double m, std::int64_t n, double alpha = 0.05);
std::int64_t tost_samples_needed(double m, double alpha = 0.05, double power = 0.8);

// The log-rank test's power, by Schoenfeld (1983): with D events (runs that
// reached the goal) in all, a share `share` of the runs in the first group and
// proportional hazards, it detects a hazard ratio HR at two-sided `alpha` with
// `power` when D share (1 - share) ln(HR)^2 = (z_(1-alpha/2) + z_power)^2.
// The smallest HR > 1 so detectable with D events (UsageError if D <= 0); and
// the events HR needs (4 (1.96 + 0.84)^2 / ln(2)^2 = 65.4 for HR 2, equal groups).
double logrank_detectable_hazard_ratio(double events, double share = 0.5, double alpha = 0.05, double power = 0.8);
double logrank_events_needed(double hazard_ratio, double share = 0.5, double alpha = 0.05, double power = 0.8);

// How the runs of a comparison of times to a goal reach it, for its simulated
// power: the fraction of them that ever do; and where their times tie (steps:
// a run reaches the goal at an evaluation, so runs reaching it at one
// evaluation tie), the pooled fraction of the runs at the goal by each distinct
// time at which some reached it, ascending, the last equal to `reached`. Empty:
// continuous times (seconds), which do not tie.
struct Reaching {
  Reaching(double fraction, std::vector<double> fractions_by_time = {})
      : reached(fraction), by_time(std::move(fractions_by_time)) {}
  double reached;
  std::vector<double> by_time;
};
// The pooled fractions at the goal by each distinct time at which an event
// came, of the runs of `a` and `b` (Reaching::by_time for times that tie).
std::vector<double> reached_by_time(const Censored& a, const Censored& b);

// The log-rank test's power for one design, by simulation: n_a and n_b runs,
// proportional hazards (b's hazard hazard_ratio times a's), and one end for
// every run (a study's runs train alike) by which a fraction `reached` of all
// of them reach the goal on average. The test reads the times' order only, so
// exponential times stand for every distribution with proportional hazards.
// With times that tie, the distinct times cut the pooled runs at the fractions
// `by_time` (the times at which those fractions are reached on average), each
// run's time the first cut at or after it: ties as the runs at hand had them.
// The figure is the power up to the simulation's error (sd <= 0.5 /
// sqrt(studies)). Seeded: the same arguments give the same figure. UsageError
// without runs or goal, or with `by_time` not rising to `reached`.
double logrank_power_simulated(std::int64_t n_a, std::int64_t n_b, double hazard_ratio, const Reaching& reaching,
                               double alpha = 0.05, int studies = 5000);
// The smallest hazard ratio > 1 that design detects with `power` (infinity if
// none up to 1000); Schoenfeld's is smaller where events are few.
double logrank_detectable_hazard_ratio_simulated(std::int64_t n_a, std::int64_t n_b, const Reaching& reaching,
                                                 double alpha = 0.05, double power = 0.8, int studies = 5000);
// The runs per group (equal groups, at least 2) that detect hazard_ratio with
// `power`, reaching the goal as `reaching` says; -1 beyond 1,000.
std::int64_t logrank_runs_needed_simulated(double hazard_ratio, const Reaching& reaching, double alpha = 0.05,
                                           double power = 0.8, int studies = 5000);

// "***" p < 0.001, "**" < 0.01, "*" < 0.05, "ns" otherwise, "-" for NaN.
std::string significance(double p);

}  // namespace dpstudy::stats
