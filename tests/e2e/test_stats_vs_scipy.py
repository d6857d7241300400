#!/usr/bin/env python3
"""Every statistic and p-value of dpstudy's stats module against scipy.stats
(Debian's python3-scipy) on the same numbers, to a relative 1e-6.

usage: test_stats_vs_scipy.py STATS_CHECK_EXE
"""
import subprocess
import sys
import unittest

import numpy as np
from scipy import stats

EXE = sys.argv[1]


def holm(p):
    p = np.asarray(p)
    order = np.argsort(p, kind="stable")
    out = np.empty_like(p)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p) - rank) * p[i]))
        out[i] = running
    return out


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
    def test_every_statistic_and_p_value(self):
        all_cases = cases()
        lines = [name + ";" + ";".join(",".join(repr(float(v)) for v in g) for g in groups)
                 for name, groups, _ in all_cases]
        pvalues = [res.pvalue for _, _, res in all_cases]
        lines.append("holm;" + ",".join(repr(float(p)) for p in pvalues))
        r = subprocess.run([EXE], input="\n".join(lines) + "\n", capture_output=True, text=True, check=True)
        rows = r.stdout.strip().split("\n")
        self.assertEqual(len(rows), len(lines))
        for (name, groups, ref), row in zip(all_cases, rows):
            stat, p = map(float, row.split())
            sizes = [len(g) for g in groups]
            self.assertTrue(np.isclose(stat, ref.statistic, rtol=1e-6, atol=0), f"{name} {sizes}: {stat} vs {ref.statistic}")
            self.assertTrue(np.isclose(p, ref.pvalue, rtol=1e-6, atol=1e-300), f"{name} {sizes}: p {p} vs {ref.pvalue}")
        mine = np.array(list(map(float, rows[-1].split())))
        np.testing.assert_allclose(mine, holm(pvalues), rtol=1e-6)
        print(f"{len(all_cases)} tests and Holm's adjustment agree with scipy {__import__('scipy').__version__}")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
