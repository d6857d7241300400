#!/usr/bin/env python3
"""dpstudy-analyze on the fixture studies of analyze_fixture.py: the statistics: comparisons with Holm and
paired tests, equivalence, power, ANOVA, steps to a result and the critical batch size, goals and the log-rank
test.

usage: test_analyze_statistics.py ANALYZE WORKLOAD_EXE DPSTUDY_DATA [SIMPLE_CNN_EXE]
"""
import csv
import glob
import io
import json
import os
import re
import shutil
import subprocess
import sys
import unittest
from statistics import NormalDist

import h5py
import numpy as np
from statsmodels.duration.survfunc import SurvfuncRight, survdiff

from analyze_fixture import AnalyzeTest, EXE
from e2e_support import need_gnuplot


class AnalyzeStatistics(AnalyzeTest):
    def test_compare_with_holm_and_paired_tests(self):
        out = self.analyze("compare", self.main, "--factor", "overlap", "--within", "sync_period", "--where", "lr=0.05")
        self.assertIn("one-way ANOVA", out)
        self.assertIn("Kruskal-Wallis", out)
        self.assertIn("Welch p Holm", out)
        self.assertIn("sync_period=4: level overlap=0.5 has no completed run here", out)  # missing level
        self.assertIn("sync_period=4: fewer than 2 levels", out)
        rows = json.loads(self.analyze("compare", self.main, "--factor", "overlap", "--where", "lr=0.05",
                                       "--where", "sync_period=1", "--baseline", "0", "--format", "json"))[1]["rows"]
        self.assertEqual(len(rows), 1)
        self.assertEqual(rows[0]["pairs"], 3)  # seeds 1..3 in both levels
        # Pooled over sync_period, overlap 0 has two runs of each seed (sync_period 1 and 4): none is
        # paired, and a note says why rather than leaving "pairs 0" to the reader.
        tables = json.loads(self.analyze("compare", self.main, "--factor", "overlap", "--where", "lr=0.05",
                                         "--format", "json"))
        self.assertEqual(tables[1]["rows"][0]["pairs"], 0)
        self.assertIn("all, 0 vs 0.5: no paired tests: seeds 1, 2, 3 have several runs in a level (other keys "
                      "pooled); a --within or --where on those keys leaves one run per seed", tables[1]["notes"])
        self.assertTrue(0 <= rows[0]["Welch p"] <= 1)
        # The difference's 95 % interval (Welch's): around the difference, excluding 0 exactly when Welch p < 0.05.
        for metric in ("final_test_accuracy", "final_test_loss", "wall_time_s"):
            tables = json.loads(self.analyze("compare", self.main, "--factor", "overlap", "--where", "lr=0.05",
                                             "--where", "sync_period=1", "--metric", metric, "--format", "json"))
            row = tables[1]["rows"][0]
            unit = {"final_test_accuracy": "fraction", "final_test_loss": "nats", "wall_time_s": "s"}[metric]
            cell = row[f"95% CI of b - a ({unit})"]
            low, high = map(float, cell.strip("[]").split(","))
            self.assertTrue(low <= row[f"mean b - a ({unit})"] <= high, row)
            if row["Welch p"] != "-":
                self.assertEqual(low > 0 or high < 0, row["Welch p"] < 0.05, row)
        omnibus = {r["test"]: r for r in json.loads(self.analyze(
            "compare", self.main, "--factor", "overlap", "--where", "lr=0.05", "--where", "sync_period=1",
            "--metric", "final_test_loss", "--format", "json"))[0]["rows"]}
        # F(1, 6 - 2) with 3 runs per level; Welch's df2 from the variances, below n - k; chi-squared has none.
        # (The loss: 50 test images' accuracies can tie within a level, and Welch's F needs variances.)
        self.assertEqual((omnibus["one-way ANOVA"]["df1"], omnibus["one-way ANOVA"]["df2"]), (1, 4))
        self.assertEqual(omnibus["Welch ANOVA"]["df1"], 1)
        self.assertTrue(2 <= omnibus["Welch ANOVA"]["df2"] <= 4, omnibus["Welch ANOVA"])
        self.assertEqual((omnibus["Kruskal-Wallis"]["df1"], omnibus["Kruskal-Wallis"]["df2"]), (1, "-"))

    def test_equivalence_within_a_margin(self):
        # Two one-sided tests per pair: "equivalent" exactly when the 90 % interval of
        # the difference lies inside the margin (one pair per family: Holm changes nothing).
        seen = set()
        for margin in ("1", "0.5", "0.0001"):
            rows = json.loads(self.analyze("compare", self.main, "--factor", "overlap", "--where", "lr=0.05",
                                           "--where", "sync_period=1", "--equivalence", margin,
                                           "--format", "json"))[1]["rows"]
            self.assertEqual(len(rows), 1)
            row = rows[0]
            low, high = map(float, row["90% CI of b - a (fraction)"].strip("[]").split(","))
            self.assertLessEqual(low, row["mean b - a (fraction)"])
            verdict = row[f"within +/-{margin}"]
            inside = -float(margin) < low and high < float(margin)
            self.assertEqual(verdict, "equivalent" if inside else "not shown", row)
            self.assertEqual(row["TOST p Holm"] < 0.05, inside, row)
            seen.add(verdict)
        self.assertEqual(seen, {"equivalent", "not shown"})  # a whole accuracy range, and a ten-thousandth of it
        out = self.analyze("compare", self.main, "--factor", "overlap", "--where", "lr=0.05", "--equivalence", "0.01")
        self.assertIn("# equivalence: two one-sided Welch t-tests (Schuirmann 1987)", out)
        # power: the seeds that would show it, more for a tighter margin.
        seeds = []
        for margin in ("0.05", "0.01"):
            rows = json.loads(self.analyze("power", self.main, "--factor", "overlap", "--where", "lr=0.05",
                                           "--where", "sync_period=1", "--equivalence", margin,
                                           "--format", "json"))[0]["rows"]
            seeds.append(rows[0][f"seeds per group for equivalence within +/-{margin}"])
        self.assertTrue(all(isinstance(n, int) and n >= 2 for n in seeds), seeds)
        self.assertLess(seeds[0], seeds[1])
        folder = os.path.join(self.tmp, "report-equivalence")
        self.analyze("report", self.main, "--by", "overlap,sync_period", "--factor", "overlap", "--where", "lr=0.05",
                     "--equivalence", "0.5", "--output", folder)
        with open(os.path.join(folder, "report.md"), encoding="utf-8") as f:
            text = f.read()
        # The command that makes the table alone.
        self.assertIn(f"dpstudy-analyze compare {self.main} --where 'lr=0.05' --equivalence 0.5 --factor overlap "
                      "--within sync_period\n", text)
        self.assertIn("within +/-0.5", text)
        # --alpha sets the test's level and its interval (1 - 2 alpha): p 9.92e-05 is equivalent at 0.05,
        # not at 1e-5.
        for alpha, interval, verdict in (("0.05", "90% CI of b - a (fraction)", "equivalent"),
                                         ("0.00001", "99.998% CI of b - a (fraction)", "not shown")):
            tables = json.loads(self.analyze("compare", self.main, "--factor", "overlap", "--where", "lr=0.05",
                                             "--where", "sync_period=1", "--equivalence", "0.5", "--alpha", alpha,
                                             "--format", "json"))
            row = tables[1]["rows"][0]
            self.assertEqual(row["within +/-0.5"], verdict, (alpha, row))
            self.assertIn(interval, row)
            self.assertIn(f"Holm-adjusted p < {float(alpha):g}", " ".join(tables[1]["notes"]))
        for args, message in (
                (["compare", "--factor", "overlap", "--equivalence", "0"], "--equivalence: '0' must be a margin > 0"),
                (["compare", "--factor", "overlap", "--equivalence", "nan"], "--equivalence: 'nan' must be"),
                (["summary", "--by", "overlap", "--equivalence", "0.01"],
                 "--equivalence 0.01: summary does not read it; it applies to compare, power, report"),
                (["compare", "--factor", "overlap", "--alpha", "0.01"],
                 "--alpha: '0.01' sets the level of the equivalence test in compare: give --equivalence MARGIN too")):
            self.assertIn(message, self.analyze(args[0], self.main, *args[1:], status=2))

    def test_steps_to_result_fits_the_critical_batch_size(self):
        # Each run's test accuracy set to reach the target first at S(B) = 2 (1 + 20 / B) steps:
        # 10, 6 and 4 steps at batch 5, 10 and 20, all evaluated steps. The fit gives B_crit = 20
        # and S_min = 2 back; 5 -> 10 halves 10 steps less than perfectly (e = 0.74).
        study = os.path.join(self.tmp, "critical")
        shutil.copytree(self.batch, study)
        for path in glob.glob(os.path.join(study, "runs", "*.h5")):
            with h5py.File(path, "r+") as f:
                first = 2 * (1 + 20 / int(f["config"].attrs["batch_size"]))
                steps = f["eval"]["step"][()]
                f["eval"]["test_accuracy"][...] = np.where(steps >= first, 0.9, 0.1)
                if "crc32" in f["eval"]["test_accuracy"].attrs:
                    del f["eval"]["test_accuracy"].attrs["crc32"]  # edited values: else a damaged file
        out = self.analyze("steps-to-result", study, "--target", "0.5")
        self.assertIn("critical batch size: B_crit = 20 (batch_size), S_min = 2 steps; fit of steps = S_min "
                      "(1 + B_crit / batch_size)", out)
        # Three points on the curve: nothing scatters about it, so B_crit's interval is the point.
        self.assertIn("critical batch size: 95 % interval of B_crit from the fit, 20 to 20 (Fieller, 1 df: the best "
                      "steps' scatter about the curve)", out)
        self.assertIn("perfect scaling from batch_size 5 up to 5 (every step from the first reaching group)", out)
        rows = list(csv.DictReader(io.StringIO(self.analyze("steps-to-result", study, "--target", "0.5",
                                                             "--format", "csv"))))
        self.assertEqual([r["best (steps)"] for r in rows], ["10", "6", "4"])
        # Fewer than 3 batch sizes: no fit, and why.
        out = self.analyze("steps-to-result", study, "--target", "0.5", "--where", "batch_size<20")
        self.assertIn("critical batch size: no fit: 2 batch size(s) reached the target, the fit needs 3", out)
        self.assertNotIn("interval of B_crit", out)

    def test_steps_to_result_draws_a_line_per_level_of_a_second_key(self):
        # Lee et al. 2021's figure: dense and sparse side by side. Here the seeds are the second key:
        # seed 1 reaches the target first at S(B) = 2 (1 + 20 / B) steps; seed 2 at 8 and 4 steps at
        # batch 5 and 10, and never at 20. Each line has its own perfect scaling, regimes and fit.
        study = os.path.join(self.tmp, "two-lines")
        shutil.copytree(self.batch, study)
        for path in glob.glob(os.path.join(study, "runs", "*.h5")):
            with h5py.File(path, "r+") as f:
                batch, seed = int(f["config"].attrs["batch_size"]), int(f["config"].attrs["seed"])
                first = 2 * (1 + 20 / batch) if seed == 1 else {5: 8, 10: 4, 20: 1e9}[batch]
                steps = f["eval"]["step"][()]
                f["eval"]["test_accuracy"][...] = np.where(steps >= first, 0.9, 0.1)
                if "crc32" in f["eval"]["test_accuracy"].attrs:
                    del f["eval"]["test_accuracy"].attrs["crc32"]  # edited values: else a damaged file
        args = ["--target", "0.5", "--by", "batch_size,seed"]
        rows = list(csv.DictReader(io.StringIO(self.analyze("steps-to-result", study, *args, "--format", "csv"))))
        self.assertEqual([(r["seed"], r["batch_size"], r["best (steps)"]) for r in rows],
                         [("1", "5", "10"), ("1", "10", "6"), ("1", "20", "4"),
                          ("2", "5", "8"), ("2", "10", "4"), ("2", "20", "-")])
        self.assertEqual([r["perfect scaling (steps)"] for r in rows], ["10", "5", "2.5", "8", "4", "2"])
        # The trials that missed: seed 2 at batch 20 trained all its steps; every other group reached.
        trained = {}
        for path in glob.glob(os.path.join(study, "runs", "*.h5")):
            with h5py.File(path, "r") as f:
                trained[(str(f["config"].attrs["seed"]), str(f["config"].attrs["batch_size"]))] = \
                    len(f["train"]["time_s"])
        self.assertEqual([r["missed after (steps)"] for r in rows], ["-"] * 5 + [str(trained[("2", "20")])])
        self.assertEqual([r["regime"] for r in rows][3:], ["-", "perfect scaling", "-"])
        out = self.analyze("steps-to-result", study, *args)
        self.assertIn("each combination of seed is a line of its own: its perfect scaling, regimes and critical batch "
                      "size", out)
        self.assertIn("seed=1: critical batch size: B_crit = 20 (batch_size), S_min = 2 steps", out)
        self.assertIn("seed=2: perfect scaling from batch_size 5 up to 10", out)
        self.assertIn("seed=2: critical batch size: no fit: 2 batch size(s) reached the target, the fit needs 3", out)
        # The figure: a block of points a line, named by its key, in a script that needs no gnuplot here.
        for kind in ("steps", "best_lr"):
            script = os.path.join(self.tmp, f"two-lines-{kind}.gp")
            self.analyze("plot", study, "--kind", kind, *args, "--output", script)
            with open(script) as f:
                text = f.read()
            self.assertIn("datafile index 1 using 1:2 with linespoints lw 2 pt 7 lc 2 title 'seed=2'", text)
            self.assertNotIn("datafile index 2 ", text)
        self.assertIn("plot --kind steps: no group reached test_accuracy 0.95, so there is nothing to draw",
                      self.analyze("plot", study, "--kind", "steps", "--target", "0.95", "--by", "batch_size,seed",
                                   "--output", os.path.join(self.tmp, "none.gp"), status=2))
        self.assertIn("--by: 'seed' is not a batch size", self.analyze(
            "plot", study, "--kind", "steps", "--target", "0.5", "--by", "seed,batch_size", "--output",
            os.path.join(self.tmp, "x.gp"), status=2))
        need_gnuplot(self)
        path = os.path.join(self.tmp, "two-lines.svg")
        self.analyze("plot", study, "--kind", "steps", *args, "--output", path)
        with open(path) as f:
            titles = re.findall(r"<title>([^<]*)</title>", f.read())
        self.assertIn("seed=1", titles)
        self.assertIn("seed=2", titles)

    def test_series_metric_curves_power_and_steps(self):
        out = self.analyze("summary", self.main, "--by", "overlap", "--metric", "test_accuracy@step=10",
                           "--where", "lr=0.05", "--format", "csv")
        self.assertEqual(len(list(csv.DictReader(io.StringIO(out)))), 2)
        out = self.analyze("curves", self.main, "--by", "sync_period", "--where", "lr=0.05", "--x", "samples",
                           "--format", "csv")
        self.assertIn("samples", out.splitlines()[0])
        out = self.analyze("power", self.main, "--factor", "overlap", "--where", "lr=0.05", "--where",
                           "sync_period=1", "--effect", "1")
        self.assertIn("seeds per group for d=1", out)
        self.assertIn(" 17", out)  # the textbook 17 per group for d = 1 at 80 % power
        out = self.analyze("steps-to-result", self.batch, "--target", "0.5")
        self.assertIn("perfect scaling (steps)", out)
        self.assertIn("regime", out)
        self.assertRegex(out, r"(perfect scaling|diminishing returns|maximal data parallelism)")
        rows = list(csv.DictReader(io.StringIO(self.analyze("steps-to-result", self.batch, "--target", "0.5",
                                                             "--format", "csv"))))
        self.assertEqual([r["batch_size"] for r in rows], ["5", "10", "20"])
        self.assertNotIn("the trials of a group", out)  # batch sizes and seeds only
        # Measured time to the target: each run's train time_s at the first evaluated step reaching it,
        # read here from the run files themselves.
        reached = {}
        for path in glob.glob(os.path.join(self.batch, "runs", "*.h5")):
            with h5py.File(path, "r") as f:
                steps, acc = f["eval"]["step"][()], f["eval"]["test_accuracy"][()]
                first = next((int(s) for s, a in zip(steps, acc) if a >= 0.5), None)
                if first is not None:
                    reached.setdefault(str(f["config"].attrs["batch_size"]), []).append(
                        float(f["train"]["time_s"][first - 1]))
        self.assertTrue(reached, "no run reached 0.5: the test checks nothing")
        for row in rows:
            times = sorted(reached.get(row["batch_size"], []))
            self.assertEqual(int(row["reached"]), len(times))
            if not times:
                self.assertEqual((row["fastest time (s)"], row["median time (s)"]), ("-", "-"))
                continue
            median = (times[(len(times) - 1) // 2] + times[len(times) // 2]) / 2
            self.assertAlmostEqual(float(row["fastest time (s)"]), times[0], delta=1e-3 * times[0])
            self.assertAlmostEqual(float(row["median time (s)"]), median, delta=1e-3 * median)
        self.assertIn("time: measured, each reaching trial's wall clock", out)
        # The best is taken over a group's trials: a key other than a metaparameter (here
        # sync_period) varying within a group is told; it was pooled silently.
        out = self.analyze("steps-to-result", self.main, "--target", "0.5", "--by", "overlap", "--where", "lr=0.05")
        self.assertIn("the trials of a group are to differ in their metaparameters only, and the best is taken over "
                      "them: pooled over sync_period (1, 4)", out)
        # Perfect scaling and the regimes are the global batch's: not columns against overlap (log2 of 0
        # was -inf, and "steps halve when overlap doubles" meant nothing), nor a plot.
        self.assertNotIn("perfect scaling", out)
        self.assertIn("best trial lr", out)
        err = self.analyze("plot", self.main, "--kind", "steps", "--target", "0.5", "--by", "overlap", "--output",
                           os.path.join(self.tmp, "steps-overlap.png"), status=2)
        self.assertIn("--by: 'overlap' is not a batch size: plot --kind steps draws against batch_size, global_batch "
                      "or workers", err)
        need_gnuplot(self)
        out = self.analyze("plot", self.main, "--kind", "steps", "--target", "0.5", "--by", "batch_size", "--where",
                           "lr=0.05", "--output", os.path.join(self.tmp, "steps-pooled.png"))
        self.assertIn("pooled over overlap (0, 0.5); sync_period (1, 4)", out)

    def test_goal_metrics_leave_out_runs_that_never_reached_the_goal(self):
        # A run that never reaches its goal records steps_to_goal -1 and time_to_goal_s 0: neither is a
        # step or a time, and as numbers they made such runs look fastest.
        subprocess.run([EXE, "--data_dir", self.data, "--dataset", "mnist", "--epochs", "1", "--output", self.tmp,
                        "--quiet", "--workers", "2", "--eval_every", "2", "--name", "goal", "--batch_size", "10",
                        "--lr", "0.05,0.000001", "--goal_error", "0.5", "--seeds", "2"],
                       check=True, stdout=subprocess.DEVNULL)
        folder = os.path.join(self.tmp, "goal")
        reached = {}
        for path in glob.glob(os.path.join(folder, "runs", "*.h5")):
            with h5py.File(path, "r") as f:
                steps = int(f["summary"].attrs["steps_to_goal"])
                reached.setdefault(float(f["config"].attrs["lr"]), []).append(
                    float(f["summary"].attrs["time_to_goal_s"]) if steps >= 0 else None)
        self.assertEqual(reached[1e-6], [None, None], "a rate of 1e-6 reached 50 % accuracy: the test checks nothing")
        self.assertTrue(all(t is not None for t in reached[0.05]))
        text = self.analyze("summary", folder, "--by", "lr", "--metric", "time_to_goal_s")
        self.assertIn("time_to_goal_s: 2 of the 4 completed runs never reached the goal and are left out (their "
                      "files hold -1 and 0: not a step or a time)", text)
        self.assertIn("lr=1e-06: 2 of its 2 run(s) never reached the goal", text)
        rows = {r["lr"]: r for r in csv.DictReader(io.StringIO(
            self.analyze("summary", folder, "--by", "lr", "--metric", "time_to_goal_s", "--format", "csv")))}
        self.assertEqual((rows["1e-06"]["n"], rows["1e-06"]["mean (s)"]), ("0", "-"))
        self.assertEqual(rows["0.05"]["n"], "2")
        mean = sum(reached[0.05]) / 2
        self.assertAlmostEqual(float(rows["0.05"]["mean (s)"]), mean, delta=1e-3 * mean)
        runs = list(csv.DictReader(io.StringIO(self.analyze("runs", folder, "--by", "lr,seed", "--metric",
                                                            "steps_to_goal", "--format", "csv"))))
        self.assertEqual(sorted(r["steps_to_goal (step)"] for r in runs if r["lr"] == "1e-06"), ["-", "-"])
        # The log-rank test sees every run: those that never reached the goal censored at their last step.
        tables = json.loads(self.analyze("compare", folder, "--factor", "lr", "--metric", "steps_to_goal",
                                         "--format", "json"))
        logrank = next(r for r in tables[0]["rows"] if r["test"] == "log-rank")
        with h5py.File(os.path.join(folder, "index.h5"), "r") as f:
            index = {k: f["index"][k][()] for k in ("steps_to_goal", "steps")}
        reached = index["steps_to_goal"] >= 0
        with h5py.File(os.path.join(folder, "index.h5"), "r") as f:
            lr = f["index"]["lr"][()]
        chi2, p = survdiff(np.where(reached, index["steps_to_goal"], index["steps"]), reached.astype(int),
                           (lr < 0.01).astype(int))
        self.assertAlmostEqual(float(logrank["statistic"]), chi2, delta=1e-3 * chi2)
        self.assertAlmostEqual(float(logrank["p"]), p, delta=max(1e-4, 1e-3 * p))
        self.assertIn("log-rank p Holm", tables[1]["rows"][0])
        # The log-rank test's power (Schoenfeld): the hazard ratio its 2 reaching runs of 4 detect, and the runs
        # per group a ratio of 2 needs at that fraction (65.35 events over half the runs reaching: 66 per group).
        tables = json.loads(self.analyze("power", folder, "--factor", "lr", "--metric", "steps_to_goal",
                                         "--hazard_ratio", "2", "--format", "json"))
        row = tables[1]["rows"][0]
        self.assertEqual([row[k] for k in ("runs a", "runs b", "reached")], [2, 2, 2], row)
        z = NormalDist().inv_cdf(0.975) + NormalDist().inv_cdf(0.8)
        detectable = np.exp(np.sqrt(z * z / 0.25 / 2))  # 52.6: two events bound almost nothing
        self.assertAlmostEqual(float(row["detectable hazard ratio"]), detectable, delta=0.001 * detectable)
        self.assertEqual(row["runs per group for hazard ratio 2"], int(np.ceil(z * z / 0.25 / np.log(2) ** 2)))
        # The design simulated: with 4 runs no order of their 2 events is significant, whatever the ratio; a
        # ratio of 2 needs as many runs as Schoenfeld counts, whose approximation holds for the 66 events of
        # 2 x 66 runs, half of them reaching the goal (test_stats_vs_scipy.py checks the simulation).
        self.assertEqual(row["detectable hazard ratio (simulated)"], "over 1000")
        self.assertIn(int(row["runs per group for hazard ratio 2 (simulated)"]), range(66, 70))
        # Steps tie at evaluations (the simulation keeps the pair's distinct steps); seconds do not, and the
        # same runs' times need no more runs than their steps.
        self.assertEqual(row["distinct times"], len(set(index["steps_to_goal"][reached])))
        seconds = json.loads(self.analyze("power", folder, "--factor", "lr", "--metric", "time_to_goal_s",
                                          "--hazard_ratio", "2", "--format", "json"))[1]["rows"][0]
        self.assertEqual(seconds["distinct times"], 2)
        self.assertLessEqual(int(seconds["runs per group for hazard ratio 2 (simulated)"]),
                             int(row["runs per group for hazard ratio 2 (simulated)"]))
        self.assertIn("power of the log-rank test on steps_to_goal", tables[1]["title"])
        self.assertIn("all, one-way ANOVA, Welch ANOVA and Kruskal-Wallis: no run of lr=1e-06 reached the goal, so "
                      "they have nothing to compare (the log-rank test counts those runs)",
                      self.analyze("compare", folder, "--factor", "lr", "--metric", "steps_to_goal"))
        # The same goal given afterwards (SERIES@reach=T, @reach_time=T): the same steps, and the times
        # steps-to-result tabulates.
        goal_given = {r["lr"]: r for r in csv.DictReader(io.StringIO(self.analyze(
            "summary", folder, "--by", "lr", "--metric", "test_accuracy@reach=0.5", "--format", "csv")))}
        recorded = {r["lr"]: r for r in csv.DictReader(io.StringIO(self.analyze(
            "summary", folder, "--by", "lr", "--metric", "steps_to_goal", "--format", "csv")))}
        self.assertEqual(goal_given["0.05"]["mean (step)"], recorded["0.05"]["mean (step)"])
        self.assertEqual(goal_given["1e-06"]["n"], "0")
        # The Kaplan-Meier median counts the runs that never reached the goal, censored at their end: where
        # every run reached it, the median; where none did, none; and over all four runs, half of which never
        # reached it, none either, though the runs that did have a median.
        self.assertEqual(recorded["0.05"]["KM median (step)"], recorded["0.05"]["median (step)"])
        self.assertEqual(recorded["1e-06"]["KM median (step)"], "-")
        # Its interval, as statsmodels computes it from each run's step at the goal or, if it never got
        # there, its last step.
        def column(metric, period):
            return [float(r[metric + " (step)"].replace("-", "nan")) for r in csv.DictReader(io.StringIO(self.analyze(
                "runs", self.main, "--where", "lr=0.05", "--where", f"sync_period={period}", "--metric", metric,
                "--format", "csv")))]
        km = {r["sync_period"]: r for r in csv.DictReader(io.StringIO(self.analyze(
            "summary", self.main, "--by", "sync_period", "--where", "lr=0.05", "--metric", "test_accuracy@reach=0.5",
            "--format", "csv")))}
        bounded = 0
        for period in ("1", "4"):
            at, end = np.array(column("test_accuracy@reach=0.5", period)), np.array(column("steps", period))
            with np.errstate(divide="ignore", invalid="ignore"):  # statsmodels' log(0) where S(t) = 0 or 1
                ref = SurvfuncRight(np.where(np.isnan(at), end, at), (~np.isnan(at)).astype(int)).quantile_ci(0.5)
            got = [float(km[period][f"KM ci95 {b} (step)"].replace("-", "nan")) for b in ("low", "high")]
            np.testing.assert_array_equal(got, ref, err_msg=f"sync_period={period}")
            bounded += np.isfinite(got).all()
        self.assertGreater(bounded, 0, "no bounded interval: a weak check")
        pooled = next(csv.DictReader(io.StringIO(self.analyze("summary", folder, "--metric", "steps_to_goal",
                                                              "--format", "csv"))))
        self.assertEqual((pooled["n"], pooled["KM median (step)"]), ("2", "-"))
        self.assertNotEqual(pooled["median (step)"], "-")
        # S stays at 0.5 to the end, so nothing bounds the median above: inf, in LaTeX as infinity.
        self.assertEqual(pooled["KM ci95 high (step)"], "inf")
        self.assertRegex(self.analyze("summary", folder, "--metric", "steps_to_goal", "--format", "latex"),
                         r" & [0-9.]+ & \$\\infty\$ \\\\\n")
        times = {r["lr"]: r for r in csv.DictReader(io.StringIO(self.analyze(
            "summary", folder, "--by", "lr", "--metric", "test_accuracy@reach_time=0.5", "--format", "csv")))}
        steps = {r["lr"]: r for r in csv.DictReader(io.StringIO(self.analyze(
            "steps-to-result", folder, "--by", "lr", "--target", "0.5", "--format", "csv")))}
        self.assertEqual(times["0.05"]["median (s)"], steps["0.05"]["median time (s)"])
        self.assertEqual(times["0.05"]["min (s)"], steps["0.05"]["fastest time (s)"])
        self.assertIn("best and median: of the trials that reached the target (fraction); compare --metric "
                      "test_accuracy@reach=0.5 tests the groups with the log-rank test",
                      self.analyze("steps-to-result", folder, "--by", "lr", "--target", "0.5"))
        tables = json.loads(self.analyze("compare", folder, "--factor", "lr", "--metric", "test_accuracy@reach=0.5",
                                         "--format", "json"))
        self.assertEqual(next(r for r in tables[0]["rows"] if r["test"] == "log-rank")["p"], logrank["p"])
        for metric, message in (("test_accuracy@reach=90", "the target must be in (0, 1]"),
                                ("test_accuracy@reach_time=most", "'most' is not a target value of test_accuracy"),
                                ("test_accuracy@reached=0.5", "expected SERIES@step=N")):
            self.assertIn(message, self.analyze("summary", folder, "--metric", metric, status=2))
        # Studies without a goal have no such metric to analyse.
        err = self.analyze("compare", self.batch, "--factor", "batch_size", "--metric", "steps_to_goal", status=2)
        self.assertIn("metric 'steps_to_goal': none of the 6 completed runs set a goal (goal_error is 0 in each)",
                      err)

    def test_anova_of_two_factors(self):
        rows = list(csv.DictReader(io.StringIO(self.analyze(
            "anova", self.main, "--factors", "sync_period,overlap", "--where", "lr=0.05", "--format", "csv"))))
        self.assertEqual([r["term"] for r in rows], ["sync_period", "overlap", "sync_period x overlap", "residual"])
        by_term = {r["term"]: r for r in rows}
        self.assertEqual(by_term["sync_period"]["df"], "1")
        self.assertEqual(by_term["overlap"]["df"], "1")
        # overlap 0.5 was never run with sync_period 4: 3 of 4 cells, the interaction cannot be estimated.
        self.assertEqual(by_term["sync_period x overlap"]["df"], "0")
        self.assertEqual(by_term["residual"]["df"], "6")  # 9 runs, 3 cells
        self.assertTrue(0 <= float(by_term["overlap"]["p"]) <= 1)
        out = self.analyze("anova", self.main, "--factors", "sync_period,overlap", "--where", "lr=0.05")
        self.assertIn("9 runs in 3 of 4 cells, 3 per cell", out)
        # The residual row's empty cells padded its line with spaces (which the README's copy kept).
        self.assertEqual([line for line in out.splitlines() if line.endswith(" ")], [])
        self.assertIn("sync_period x overlap cannot be estimated (empty cells or one level)", out)
        # One family per --within level; the diverged lr=1000 runs leave their family without cells.
        out = self.analyze("anova", self.main, "--factors", "sync_period,overlap", "--within", "lr")
        self.assertIn("lr=1000: fewer than 2 cells with completed runs; no test", out)
        for args, message in ((["--factors", "overlap"], "anova needs --factors K1,K2"),
                              (["--factors", "overlap,speed"], "--factors 'speed' is not a column of the index")):
            self.assertIn(message, self.analyze("anova", self.main, *args, status=2))


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
