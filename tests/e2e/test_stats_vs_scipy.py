#!/usr/bin/env python3
"""Every statistic and p-value of dpstudy's stats module against scipy.stats
(Debian's python3-scipy) on the same numbers, to a relative 1e-6; the factorial
ANOVA against statsmodels (python3-statsmodels).

Also `dpstudy-analyze check-stats`, the installed form of this check: its
reference values must be scipy's and statsmodels' for its data, and the
command must find the build's statistics agreeing with them.

usage: test_stats_vs_scipy.py STATS_CHECK_EXE DPSTUDY_ANALYZE
"""
import csv
import importlib
import io
import itertools
import subprocess
import sys
import unittest

import numpy as np
from scipy import optimize, stats

EXE, ANALYZE = sys.argv[1:3]


def holm(p):
    p = np.asarray(p)
    order = np.argsort(p, kind="stable")
    out = np.empty_like(p)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p) - rank) * p[i]))
        out[i] = running
    return out


def stats_check(lines):
    """The rows stats_check prints for these input lines, one row each."""
    r = subprocess.run([EXE], input="\n".join(lines) + "\n", capture_output=True, text=True, check=True)
    return r.stdout.strip().split("\n")


def groups_text(groups):
    """Groups as stats_check reads them: values comma-separated, groups ';'-separated."""
    return ";".join(",".join(repr(float(v)) for v in g) for g in groups)


def cases():
    rng = np.random.default_rng(7)
    out = []
    for n1, n2 in ((5, 5), (6, 9), (12, 15), (30, 25)):
        a = rng.normal(0.85, 0.01, n1)
        b = rng.normal(0.86, 0.02, n2)
        out.append(("ttest_ind", [a, b], stats.ttest_ind(a, b, equal_var=False)))
        out.append(("mannwhitneyu", [a, b], stats.mannwhitneyu(a, b)))
        # Accuracies over 10,000 test images repeat: ties, so the normal approximation.
        at, bt = np.round(a, 3), np.round(b, 3)
        out.append(("mannwhitneyu", [at, bt], stats.mannwhitneyu(at, bt)))
        c = rng.normal(0.855, 0.015, n1)
        out.append(("f_oneway", [a, b, c], stats.f_oneway(a, b, c)))
        out.append(("kruskal", [a, b, c], stats.kruskal(a, b, c)))
        out.append(("kruskal", [at, bt, np.round(c, 3)], stats.kruskal(at, bt, np.round(c, 3))))
    for n in (5, 8, 20, 60):
        x = rng.normal(0.85, 0.01, n)
        y = x + rng.normal(0.002, 0.004, n)
        out.append(("ttest_rel", [x, y], stats.ttest_rel(x, y)))
        out.append(("wilcoxon", [x, y], stats.wilcoxon(x, y)))
        yz = y.copy()
        yz[:2] = x[:2]  # zero differences: the approximation
        # (named: SciPy 1.10 chose it by itself, later SciPy chooses the exact test here)
        out.append(("wilcoxon", [x, yz], stats.wilcoxon(x, yz, method="approx")))
    return out


class AgainstScipy(unittest.TestCase):
    def statsmodels(self, module):
        """A statsmodels module, or the test fails saying which package is missing."""
        try:
            return importlib.import_module(module)
        except ImportError as e:
            self.fail(f"python3-statsmodels is needed for this check (tools/install-deps): {e}")

    def test_every_statistic_and_p_value(self):
        all_cases = cases()
        lines = [name + ";" + groups_text(groups) for name, groups, _ in all_cases]
        pvalues = [res.pvalue for _, _, res in all_cases]
        lines.append("holm;" + groups_text([pvalues]))
        rows = stats_check(lines)
        self.assertEqual(len(rows), len(lines))
        for (name, groups, ref), row in zip(all_cases, rows):
            stat, p, df1, df2 = map(float, row.split())
            sizes = [len(g) for g in groups]
            self.assertTrue(np.isclose(stat, ref.statistic, rtol=1e-6, atol=0), f"{name} {sizes}: {stat} vs {ref.statistic}")
            self.assertTrue(np.isclose(p, ref.pvalue, rtol=1e-6, atol=1e-300), f"{name} {sizes}: p {p} vs {ref.pvalue}")
            if name in ("f_oneway", "kruskal"):  # scipy 1.10 reports no df: F(k - 1, n - k), chi-squared(k - 1)
                k, n = len(groups), sum(sizes)
                self.assertEqual(df1, k - 1, f"{name} {sizes}: df1")
                if name == "f_oneway":
                    self.assertEqual(df2, n - k, f"{name} {sizes}: df2")
                else:
                    self.assertTrue(np.isnan(df2), f"{name} {sizes}: a chi-squared test has no df2")
        mine = np.array(list(map(float, rows[-1].split())))
        np.testing.assert_allclose(mine, holm(pvalues), rtol=1e-6)
        print(f"{len(all_cases)} tests and Holm's adjustment agree with scipy {__import__('scipy').__version__}")

    def test_welch_anova_against_statsmodels(self):
        # compare's omnibus "Welch ANOVA" was checked against nothing (scipy 1.10 has none).
        anova_oneway = self.statsmodels("statsmodels.stats.oneway").anova_oneway
        rng = np.random.default_rng(13)
        cases = []
        for sizes, sds in (((5, 9, 6), (0.01, 0.02, 0.015)), ((5, 5), (0.004, 0.012)), ((3, 4, 5, 6), (0.02, 0.005,
                           0.01, 0.03)), ((20, 12, 30), (0.01, 0.01, 0.01)), ((2, 2, 2), (0.01, 0.03, 0.02))):
            cases.append([rng.normal(0.85 + 0.004 * i, sd, n) for i, (n, sd) in enumerate(zip(sizes, sds))])
        for groups, row in zip(cases, stats_check(["welch_anova;" + groups_text(groups) for groups in cases])):
            stat, p, df1, df2 = map(float, row.split())
            ref = anova_oneway(groups, use_var="unequal", welch_correction=True)
            sizes = [len(g) for g in groups]
            self.assertTrue(np.isclose(stat, ref.statistic, rtol=1e-6), f"{sizes}: F {stat} vs {ref.statistic}")
            self.assertTrue(np.isclose(p, ref.pvalue, rtol=1e-6), f"{sizes}: p {p} vs {ref.pvalue}")
            np.testing.assert_allclose([df1, df2], [ref.df_num, ref.df_denom], rtol=1e-6, err_msg=f"{sizes}: df")
        print(f"{len(cases)} Welch ANOVAs agree with statsmodels' anova_oneway")

    def test_logrank_against_statsmodels(self):
        # compare's log-rank test of steps (or seconds) to a goal, runs that never reached it censored at their end.
        survdiff = self.statsmodels("statsmodels.duration.survfunc").survdiff
        rng = np.random.default_rng(23)
        cases = []
        for sizes, scales, horizon in (((5, 5), (300, 500), 600), ((6, 9, 4), (200, 250, 400), 500),
                                       ((12, 15), (1000, 1100), 1500), ((3, 4, 5, 6), (100, 300, 200, 150), 250),
                                       ((8, 8), (50, 50), 1000)):
            groups = []
            for n, scale in zip(sizes, scales):
                # Evaluated every 50 steps: many ties; a run that passes the horizon is censored there.
                t = np.ceil(rng.exponential(scale, n) / 50) * 50
                groups.append((np.minimum(t, horizon), (t <= horizon).astype(int)))
            cases.append(groups)
        lines = ["logrank;" + ";".join(",".join(repr(float(v)) for v in part) for g in groups for part in g)
                 for groups in cases]
        for groups, row in zip(cases, stats_check(lines)):
            chi2, p, df = map(float, row.split())
            time = np.concatenate([t for t, _ in groups])
            status = np.concatenate([e for _, e in groups])
            group = np.concatenate([np.full(len(t), i) for i, (t, _) in enumerate(groups)])
            ref_chi2, ref_p = survdiff(time, status, group)
            sizes = [len(t) for t, _ in groups]
            self.assertTrue(np.isclose(chi2, ref_chi2, rtol=1e-6), f"{sizes}: chi2 {chi2} vs {ref_chi2}")
            self.assertTrue(np.isclose(p, ref_p, rtol=1e-6), f"{sizes}: p {p} vs {ref_p}")
            self.assertEqual(df, len(groups) - 1)
        self.assertTrue(any(e.min() == 0 for groups in cases for _, e in groups), "no censored run: a weak check")
        print(f"{len(cases)} log-rank tests agree with statsmodels' survdiff")
        # plot --kind reach draws 1 - S(t), the Kaplan-Meier estimate, per group.
        SurvfuncRight = self.statsmodels("statsmodels.duration.survfunc").SurvfuncRight
        groups = [g for groups in cases for g in groups]
        lines = ["kaplan_meier;" + ";".join(",".join(repr(float(v)) for v in part) for part in g) for g in groups]
        for (t, e), row in zip(groups, stats_check(lines)):
            times, survival, se = (np.array(list(map(float, part.split()))) for part in row.split("|"))
            ref = SurvfuncRight(t, e)
            np.testing.assert_allclose(times, ref.surv_times, rtol=1e-12)
            np.testing.assert_allclose(survival, ref.surv_prob, rtol=1e-9)
            np.testing.assert_allclose(se, ref.surv_prob_se, rtol=1e-9)  # NaN where statsmodels has NaN
        print(f"{len(groups)} Kaplan-Meier estimates agree with statsmodels' SurvfuncRight")
        # summary's KM median of a time to a goal and its interval; other quantiles and levels too.
        quantiles = [(t, e, p, c) for t, e in groups for p, c in ((0.5, 0.95), (0.25, 0.9), (0.75, 0.99))]
        # Small groups of ties as a study of 3 to 6 seeds gives (S = 0.5 exactly, every run reaching, none).
        quantiles += [(np.array(t, float), np.array(e), 0.5, 0.95) for t, e in (
            ([100, 100, 200, 300], [1, 1, 0, 0]), ([50, 100, 150, 200, 250, 300], [1, 1, 1, 1, 1, 1]),
            ([400, 400, 400], [0, 0, 0]), ([100, 200, 200, 300, 400, 400], [1, 1, 1, 0, 1, 0]),
            ([100, 200, 300], [1, 1, 1]))]
        lines = ["km_quantile;" + ";".join(",".join(repr(float(v)) for v in part) for part in (t, e, [p], [c]))
                 for t, e, p, c in quantiles]
        finite = 0
        for (t, e, p, c), row in zip(quantiles, stats_check(lines)):
            got = list(map(float, row.split()))
            ref = SurvfuncRight(t, e)
            want = [ref.quantile(p), *ref.quantile_ci(p, alpha=1 - c, method="cloglog")]
            # statsmodels takes the first time with S < 1 - p; where S is flat at exactly 1 - p, dpstudy takes
            # the flat's midpoint, as R's quantile.survfit (values from R: test_stats.cpp), but not to the end.
            flat = np.flatnonzero(np.isclose(ref.surv_prob, 1 - p, rtol=0, atol=1e-8))
            if len(flat):
                i = flat[0]
                want[0] = (ref.surv_times[i] + ref.surv_times[i + 1]) / 2 if i + 1 < len(ref.surv_times) else np.nan
            np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=f"{t} {e} p={p} confidence={c}")
            finite += np.isfinite(got).all()
        self.assertGreater(finite, 10, "few quantiles with a bounded interval: a weak check")
        self.assertTrue(any(np.isinf(float(row.split()[2])) for row in stats_check(lines)), "no open interval")
        print(f"{len(quantiles)} Kaplan-Meier quantiles and their intervals agree with statsmodels' SurvfuncRight")

    def test_interval_of_a_difference(self):
        # compare's "95% CI of b - a": Welch's interval (SciPy 1.10 has no confidence_interval(): its t quantile
        # at the df statsmodels' ttest_ind(usevar="unequal") reports).
        ttest_ind = self.statsmodels("statsmodels.stats.weightstats").ttest_ind
        rng = np.random.default_rng(17)
        settings = ((5, 5, 0.0, 0.01, 0.01, 0.95), (3, 9, 0.01, 0.002, 0.02, 0.95),
                    (20, 12, -0.004, 0.01, 0.005, 0.99), (2, 2, 0.02, 0.01, 0.01, 0.9))
        cases = [(rng.normal(0.85 + shift, sa, n1), rng.normal(0.85, sb, n2), conf)
                 for n1, n2, shift, sa, sb, conf in settings]
        lines = [f"welch_interval;{','.join(map(repr, map(float, a)))};{','.join(map(repr, map(float, b)))};{c!r}"
                 for a, b, c in cases]
        for (a, b, conf), row in zip(cases, stats_check(lines)):
            diff, low, high, df = map(float, row.split())
            ref_df = ttest_ind(a, b, usevar="unequal")[2]
            se = np.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b))
            half = stats.t.ppf(0.5 + conf / 2, ref_df) * se
            np.testing.assert_allclose([diff, low, high, df], [a.mean() - b.mean(), a.mean() - b.mean() - half,
                                                               a.mean() - b.mean() + half, ref_df], rtol=1e-6)
            # The 95 % interval excludes 0 exactly when Welch's two-sided p < 0.05.
            if conf == 0.95:
                self.assertEqual(low > 0 or high < 0, stats.ttest_ind(a, b, equal_var=False).pvalue < 0.05)
        print(f"{len(cases)} Welch intervals of a difference agree")

    def test_critical_batch_size_and_its_interval_against_statsmodels(self):
        # steps = a + b / B by weighted least squares (weights 1 / steps^2): statsmodels' WLS gives a, b and
        # their covariance (residual variance over n - 2 df); Fieller's interval of b / a from them solves
        # (b - r a)^2 = t^2 (var b - 2 r cov + r^2 var a) for r, here with numpy's roots.
        sm = self.statsmodels("statsmodels.api")
        rng = np.random.default_rng(23)
        cases = []
        for n, b_crit, s_min, noise, conf in ((3, 200, 500, 0.05, 0.95), (9, 500, 300, 0.1, 0.95),
                                              (6, 64, 1000, 0.02, 0.9), (4, 3000, 40, 0.1, 0.95)):
            batch = 16.0 * 2 ** np.arange(n)
            cases.append((batch, s_min * (1 + b_crit / batch) * np.exp(rng.normal(0, noise, n)), conf))
        lines = [f"critical_batch;{','.join(repr(float(v)) for v in b)};{','.join(repr(float(v)) for v in s)};{c!r}"
                 for b, s, c in cases]
        bounded = unbounded = 0
        for (batch, steps, conf), row in zip(cases, stats_check(lines)):
            b_crit, s_min, low, high, df = map(float, row.split())
            fit = sm.WLS(steps, np.column_stack([np.ones_like(batch), 1 / batch]), weights=1 / steps ** 2).fit()
            (a, b), cov = fit.params, fit.cov_params()
            np.testing.assert_allclose([b_crit, s_min, df], [b / a, a, len(batch) - 2], rtol=1e-6)
            t2 = stats.t.ppf(0.5 + conf / 2, len(batch) - 2) ** 2
            quadratic = [a * a - t2 * cov[0, 0], -2 * (a * b - t2 * cov[0, 1]), b * b - t2 * cov[1, 1]]
            if quadratic[0] > 0:
                np.testing.assert_allclose([low, high], sorted(np.roots(quadratic).real), rtol=1e-6)
                self.assertTrue(low <= b_crit <= high)
                bounded += 1
            else:
                self.assertEqual((low, high), (-np.inf, np.inf))
                unbounded += 1
        self.assertTrue(bounded and unbounded, (bounded, unbounded))
        # No fit: too few points, or steps that rise with the batch.
        rows = stats_check(["critical_batch;16,32;100,50;0.95", "critical_batch;16,32,64;10,20,40;0.95"])
        self.assertTrue(all(np.isnan(float(v)) for row in rows for v in row.split()))
        print(f"{len(cases)} critical batch sizes and their Fieller intervals agree with statsmodels' WLS")

    def test_equivalence_test_against_statsmodels(self):
        ttost_ind = self.statsmodels("statsmodels.stats.weightstats").ttost_ind
        rng = np.random.default_rng(11)
        cases = []
        for n1, n2, shift, margin, alpha in ((5, 5, 0.0, 0.01, 0.05), (6, 9, 0.004, 0.01, 0.05),
                                             (12, 15, 0.012, 0.01, 0.05), (30, 25, -0.003, 0.005, 0.05),
                                             (5, 7, 0.0, 0.001, 0.05), (8, 8, 0.002, 0.01, 0.01),
                                             (20, 14, -0.001, 0.006, 0.025)):
            cases.append((rng.normal(0.85 + shift, 0.006, n1), rng.normal(0.85, 0.009, n2), margin, alpha))
        lines = [f"tost;{','.join(map(repr, map(float, a)))};{','.join(map(repr, map(float, b)))};{m!r};{al!r}"
                 for a, b, m, al in cases]
        for (a, b, m, alpha), row in zip(cases, stats_check(lines)):
            df, p, low, high = map(float, row.split())
            ref_p, lower, upper = ttost_ind(a, b, -m, m, usevar="unequal")
            self.assertTrue(np.isclose(p, ref_p, rtol=1e-6), f"{len(a)}, {len(b)}: p {p} vs {ref_p}")
            self.assertTrue(np.isclose(df, lower[2], rtol=1e-6) and np.isclose(df, upper[2], rtol=1e-6))
            # The 1 - 2 alpha interval (90 % at alpha 0.05): inside the margin exactly when p < alpha.
            d = a.mean() - b.mean()
            se = np.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b))
            half = stats.t.ppf(1 - alpha, lower[2]) * se
            np.testing.assert_allclose([low, high], [d - half, d + half], rtol=1e-6)
            self.assertEqual(p < alpha, -m < low and high < m)
        print(f"{len(cases)} equivalence tests agree with statsmodels' ttost_ind")

    def test_equivalence_power_against_simulation(self):
        # Seeds per group to show |diff| < m sd with 80 % power when the true
        # difference is 0: the exact power at n, and at n - 1 (short of 0.8), is
        # what simulated Welch TOSTs give, within their noise (sd 0.003 here).
        rng = np.random.default_rng(5)

        def simulated(m, n):
            a, b = rng.normal(0, 1, (20000, n)), rng.normal(0, 1, (20000, n))
            d = a.mean(1) - b.mean(1)
            va, vb = a.var(1, ddof=1) / n, b.var(1, ddof=1) / n
            se, df = np.sqrt(va + vb), (va + vb) ** 2 / (va ** 2 / (n - 1) + vb ** 2 / (n - 1))
            return (np.maximum(stats.t.sf((d + m) / se, df), stats.t.cdf((d - m) / se, df)) < 0.05).mean()

        def exact(m, n):
            power, needed = stats_check([f"tost_power;{m};{n}"])[0].split()
            return float(power), int(needed)

        for m in (0.8, 1.5, 3.0):
            n = exact(m, 2)[1]
            (at_n, _), (below, _) = exact(m, n), exact(m, n - 1)
            sim_n, sim_below = simulated(m, n), simulated(m, n - 1)
            self.assertGreaterEqual(at_n, 0.8)
            self.assertLess(below, 0.8)
            self.assertAlmostEqual(at_n, sim_n, delta=0.012, msg=f"m {m}: {n} per group")
            self.assertAlmostEqual(below, sim_below, delta=0.012, msg=f"m {m}: {n - 1} per group")
            print(f"m = {m}: {n} per group, power {at_n:.3f} (simulated {sim_n:.3f}); "
                  f"{n - 1}: {below:.3f} (simulated {sim_below:.3f})")

    def test_logrank_power_against_simulation(self):
        # Schoenfeld's approximation, which `power` of a time to a goal gives, is optimistic for few events:
        # at the hazard ratio it calls detectable with 80 % power, dpstudy's own log-rank test (checked
        # against statsmodels above) detects it in 72 % of simulated pairs of 10 exponential times per
        # group (20 events) and 77 % of 30 (docs/analysis.md measured these with 20,000 pairs). 4,000 here:
        # sd 0.007.
        for per_group, measured in ((10, 0.7196), (30, 0.7737)):
            events = 2 * per_group
            hr, needed = map(float, stats_check([f"logrank_power;{events};0.5"])[0].split())
            self.assertAlmostEqual(needed, events, delta=1e-9)
            rng = np.random.default_rng(17)
            lines = []
            for _ in range(4000):
                a, b = rng.exponential(1.0, per_group), rng.exponential(1.0 / hr, per_group)
                lines.append("logrank;" + groups_text([a, np.ones(per_group), b, np.ones(per_group)]))
            p = np.array([float(row.split()[1]) for row in stats_check(lines)])
            power = (p < 0.05).mean()
            self.assertAlmostEqual(power, measured, delta=0.025, msg=f"hazard ratio {hr:.3f}, {events} events")
            print(f"hazard ratio {hr:.3f} with {events} events: detected in {power:.3f} of 4000 simulated pairs")

    def test_simulated_logrank_power_against_the_log_rank_test(self):
        # `power`'s simulated columns: at the hazard ratio dpstudy's simulation calls detectable with 80 % power
        # for a design (runs a group, the fraction reaching the goal by one end, and for steps the pooled fractions
        # at the goal by each evaluation at which some reached it, where runs tie), pairs drawn here with numpy and
        # tested by dpstudy's general log-rank test (checked against statsmodels above, ties included) detect it in
        # 80 % of 4,000 (sd 0.0063), censored and tied where the design says.
        designs = ((10, 10, 1.0, ()), (6, 12, 0.6, ()), (20, 20, 0.4, ()),
                   (10, 10, 1.0, (0.2, 0.45, 0.7, 1.0)), (8, 12, 0.75, (0.25, 0.75)))
        for n_a, n_b, reached, by_time in designs:
            case = f"logrank_power_simulated;{n_a};{n_b};{reached}" + (";" + ",".join(map(str, by_time)) if by_time else "")
            hr, power = map(float, stats_check([case])[0].split())
            self.assertGreaterEqual(power, 0.8)
            share = n_a / (n_a + n_b)

            def when(fraction):  # the time by which that pooled fraction of the runs is at the goal
                at = lambda c: share * -np.expm1(-c) + (1 - share) * -np.expm1(-hr * c) - fraction
                return np.inf if fraction >= 1 else optimize.brentq(at, 1e-12, 1e4)

            end, cuts = when(reached), np.array([when(f) for f in by_time])
            rng = np.random.default_rng(23)
            lines = []
            for _ in range(4000):
                a, b = rng.exponential(1.0, n_a), rng.exponential(1.0 / hr, n_b)
                if min(a.min(), b.min()) >= end:
                    lines.append(None)  # no event: nothing to test, not rejected
                    continue
                groups = []
                for t in (a, b):
                    reached_here = t < end
                    time = np.searchsorted(cuts, t).astype(float) if by_time else t  # the cut at or after it
                    groups += [np.where(reached_here, time, len(cuts) if by_time else end), reached_here.astype(float)]
                lines.append("logrank;" + groups_text(groups))
            p = np.array([float(row.split()[1]) for row in stats_check([x for x in lines if x])])
            detected = (p < 0.05).sum() / len(lines)
            self.assertAlmostEqual(detected, 0.8, delta=0.025, msg=case)
            print(f"{n_a} and {n_b} runs, {reached} reaching the goal, tied at {by_time or 'no'} fractions: simulated "
                  f"detectable hazard ratio {hr:.3f}, detected in {detected:.3f} of 4000 pairs drawn here")

    def test_factorial_anova_against_statsmodels(self):
        """Type II sums of squares, F and p of every term, balanced and not, 2 and 3 factors."""
        pd = self.statsmodels("pandas")  # statsmodels' own dependency
        smf = self.statsmodels("statsmodels.formula.api")
        anova_lm = self.statsmodels("statsmodels.stats.anova").anova_lm
        rng = np.random.default_rng(11)
        designs = []
        for counts in ((3, 2, 5), (3, 2, None), (2, 2, 3, 4), (2, 3, 2, None)):
            *sizes, per_cell = counts
            cells = np.array(np.meshgrid(*[np.arange(s) for s in sizes], indexing="ij")).reshape(len(sizes), -1).T
            rows = []
            for cell in cells:
                for _ in range(per_cell or int(rng.integers(2, 7))):  # None: 2 to 6 per cell, unbalanced
                    rows.append(cell)
            levels = np.array(rows).T
            # An interaction, as overlap x sync period in Study A: the first factor matters at one level of the second.
            y = 0.85 + 0.01 * levels[0] * (levels[1] == 1) + 0.004 * levels[1] + rng.normal(0, 0.005, levels.shape[1])
            designs.append((levels, y))
        lines = [";".join(["factorial", ",".join(repr(float(v)) for v in y)] +
                          [",".join(str(int(v)) for v in f) for f in levels]) for levels, y in designs]
        for (levels, y), row in zip(designs, stats_check(lines)):
            names = "abc"[:len(levels)]
            frame = pd.DataFrame({"y": y, **{n: levels[i] for i, n in enumerate(names)}})
            ref = anova_lm(smf.ols("y ~ " + "*".join(f"C({n})" for n in names), frame).fit(), typ=2)
            values = list(map(float, row.split()))
            terms = [values[i:i + 4] for i in range(0, len(values) - 2, 4)]
            # statsmodels names terms C(a), C(b), C(a):C(b), ...; ours come by size, then in order.
            combos = [c for k in range(1, len(names) + 1) for c in itertools.combinations(names, k)]
            by_name = {":".join(f"C({n})" for n in combo): t for combo, t in zip(combos, terms)}
            self.assertEqual(set(by_name), set(ref.index) - {"Residual"})
            for name, (ss, df, f, p) in by_name.items():
                for mine, theirs, what in ((ss, ref.loc[name, "sum_sq"], "SS"), (df, ref.loc[name, "df"], "df"),
                                           (f, ref.loc[name, "F"], "F"), (p, ref.loc[name, "PR(>F)"], "p")):
                    self.assertTrue(np.isclose(mine, theirs, rtol=1e-6, atol=1e-300), f"{levels.shape} {name} {what}: "
                                    f"{mine} vs {theirs}")
            self.assertTrue(np.isclose(values[-2], ref.loc["Residual", "sum_sq"], rtol=1e-6))
            self.assertEqual(values[-1], ref.loc["Residual", "df"])
        # Edge cases: an empty cell leaves the interaction inestimable (df 0), one value per cell leaves no residual.
        empty = "factorial;0.80,0.81,0.84,0.85,0.90,0.91;0,0,1,1,0,0;0,0,0,0,1,1"
        single = "factorial;0.80,0.84,0.90,0.97;0,1,0,1;0,0,1,1"
        e, o = (list(map(float, row.split())) for row in stats_check([empty, single]))
        self.assertEqual((e[1], e[5], e[9], e[13]), (1.0, 1.0, 0.0, 3.0))  # a, b, a:b, residual df
        self.assertTrue(e[0] > 0 and e[4] > 0 and np.isnan(e[8]) and np.isnan(e[10]), e)
        self.assertEqual(o[13], 0.0)
        self.assertTrue(all(np.isnan(o[i]) for i in (2, 3, 6, 7)), o)
        print(f"{len(designs)} factorial ANOVAs agree with statsmodels {__import__('statsmodels').__version__}")

    def test_the_installed_check_carries_scipys_values(self):
        # The data of tools/analyze/check_stats.cpp.
        a = [0.812, 0.827, 0.791, 0.848, 0.803, 0.819]
        b = [0.841, 0.862, 0.879, 0.822, 0.868, 0.855]
        c = [0.781, 0.806, 0.774, 0.818, 0.793, 0.788]
        oneway = self.statsmodels("statsmodels.stats.oneway")
        weightstats = self.statsmodels("statsmodels.stats.weightstats")
        survfunc = self.statsmodels("statsmodels.duration.survfunc")
        multitest = self.statsmodels("statsmodels.stats.multitest")
        welch_anova = oneway.anova_oneway([a, b, c], use_var="unequal")
        chi2, p_logrank = survfunc.survdiff([200, 250, 300, 350, 400, 400, 150, 150, 200, 250, 250, 400],
                                            [1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 0], [0] * 6 + [1] * 6)
        expected = {
            ("Welch's t", "t"): stats.ttest_ind(a, b, equal_var=False).statistic,
            ("Welch's t", "p"): stats.ttest_ind(a, b, equal_var=False).pvalue,
            ("Mann-Whitney U, exact", "U"): stats.mannwhitneyu(a, b).statistic,
            ("Mann-Whitney U, exact", "p"): stats.mannwhitneyu(a, b).pvalue,
            ("paired t", "t"): stats.ttest_rel(a, b).statistic,
            ("paired t", "p"): stats.ttest_rel(a, b).pvalue,
            ("Wilcoxon signed-rank, exact", "T"): stats.wilcoxon(a, b).statistic,
            ("Wilcoxon signed-rank, exact", "p"): stats.wilcoxon(a, b).pvalue,
            ("one-way ANOVA", "F"): stats.f_oneway(a, b, c).statistic,
            ("one-way ANOVA", "p"): stats.f_oneway(a, b, c).pvalue,
            ("Welch's ANOVA", "F"): welch_anova.statistic,
            ("Welch's ANOVA", "p"): welch_anova.pvalue,
            ("Kruskal-Wallis", "H"): stats.kruskal(a, b, c).statistic,
            ("Kruskal-Wallis", "p"): stats.kruskal(a, b, c).pvalue,
            ("equivalence within 0.05", "p"): weightstats.ttost_ind(np.array(a), np.array(b), -0.05, 0.05,
                                                                     usevar="unequal")[0],
            ("log-rank", "chi2"): chi2,
            ("log-rank", "p"): p_logrank,
        }
        for i, p in enumerate(multitest.multipletests([0.012, 0.041, 0.030], method="holm")[1]):
            expected[("Holm", f"p{i + 1}")] = p
        batch, steps = np.array([16, 32, 64, 128, 256.0]), np.array([2050, 1100, 610, 360, 240.0])
        fit = self.statsmodels("statsmodels.api").WLS(steps, np.column_stack([np.ones(5), 1 / batch]),
                                                      weights=1 / steps ** 2).fit()
        (s_min, slope), cov = fit.params, fit.cov_params()
        t2 = stats.t.ppf(0.975, 3) ** 2
        qa, qb, qc = s_min ** 2 - t2 * cov[0, 0], s_min * slope - t2 * cov[0, 1], slope ** 2 - t2 * cov[1, 1]
        low, high = (qb - np.sqrt(qb * qb - qa * qc)) / qa, (qb + np.sqrt(qb * qb - qa * qc)) / qa
        expected.update({("critical batch size", "B_crit"): slope / s_min, ("critical batch size", "S_min"): s_min,
                         ("critical batch size", "95% low"): low, ("critical batch size", "95% high"): high})
        r = subprocess.run([ANALYZE, "check-stats", "--format", "csv"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        rows = list(csv.DictReader(io.StringIO(r.stdout)))
        self.assertEqual(sorted((row["check"], row["quantity"]) for row in rows), sorted(expected))
        for row in rows:
            ref = expected[(row["check"], row["quantity"])]
            self.assertTrue(np.isclose(float(row["reference"]), ref, rtol=1e-12, atol=0), f"{row} vs {ref}")
            self.assertEqual(row["result"], "ok", row)
        print(f"check-stats: {len(rows)} reference values are scipy's and statsmodels', and the build agrees")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
