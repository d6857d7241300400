#!/usr/bin/env python3
"""dpstudy-analyze on a real study made from fixtures: every command, every
output format, plots, and the edge cases (n = 1, identical values, a group of
diverged runs only, a missing factor level, an unknown metric, a folder that
is not a study).

usage: test_analyze.py ANALYZE WORKLOAD_EXE DPSTUDY_DATA
"""
import csv
import glob
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import unittest
from statistics import NormalDist

import h5py
import numpy as np
from statsmodels.duration.survfunc import SurvfuncRight, survdiff

from e2e_support import TempFolderTest, make_fixtures, need_gnuplot

ANALYZE, EXE, DATA_TOOL = sys.argv[1], sys.argv[2], sys.argv[3]
SIMPLE_CNN = sys.argv[4] if len(sys.argv) > 4 else ""


class Analyze(TempFolderTest):
    prefix = "dpstudy-analyze-test-"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        data = cls.data = make_fixtures(DATA_TOOL, os.path.join(cls.tmp, "data"), 200, 50)
        # On the CPU, also on a GPU node: tests below edit the runs' gpu and cpu_kernels by hand.
        common = [EXE, "--data_dir", data, "--dataset", "mnist", "--epochs", "1", "--output", cls.tmp, "--quiet",
                  "--workers", "2", "--eval_every", "2", "--device", "cpu"]
        # lr 1000 diverges: a group with diverged runs only. overlap 0.5 is missing at sync_period 4.
        subprocess.run(common + ["--name", "main", "--batch_size", "10", "--overlap", "0,0.5", "--sync_period", "1,4",
                                 "--lr", "0.05,1000", "--seeds", "3", "--exclude", "overlap=0.5 & sync_period=4"],
                       check=True, stdout=subprocess.DEVNULL)
        subprocess.run(common + ["--name", "batch", "--batch_size", "5,10,20", "--seeds", "2"], check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run(common + ["--name", "periods", "--batch_size", "10", "--sync_period", "1,never", "--seeds", "2"],
                       check=True, stdout=subprocess.DEVNULL)
        cls.main = os.path.join(cls.tmp, "main")
        cls.batch = os.path.join(cls.tmp, "batch")
        cls.periods = os.path.join(cls.tmp, "periods")

    def analyze(self, *args, status=0):
        r = subprocess.run([ANALYZE, *args], capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, status, f"{args}: {r.stdout}\n{r.stderr}")
        return r.stdout + r.stderr

    def test_summary_in_every_format(self):
        out = self.analyze("summary", self.main, "--by", "overlap,sync_period,lr")
        self.assertIn("mean (fraction)", out)
        self.assertIn("ci95 low (fraction)", out)
        rows = list(csv.DictReader(io.StringIO(self.analyze("summary", self.main, "--by", "overlap,sync_period,lr",
                                                            "--format", "csv"))))
        self.assertEqual(len(rows), 6)
        ok = [r for r in rows if r["lr"] == "0.05"]
        self.assertTrue(all(r["n"] == "3" and r["not completed"] == "0" for r in ok))
        diverged = [r for r in rows if r["lr"] == "1000"]
        self.assertTrue(all(r["n"] == "0" and r["not completed"] == "3" for r in diverged))
        tables = json.loads(self.analyze("summary", self.main, "--by", "lr", "--format", "json"))
        self.assertEqual(tables[0]["rows"][0]["n"], 9)
        self.assertIn("no completed run (9 diverged or failed)", " ".join(tables[0]["notes"]))
        md = self.analyze("summary", self.main, "--by", "lr", "--format", "markdown")
        self.assertIn("| lr | n | not completed |", md)
        with_div = self.analyze("summary", self.main, "--by", "lr", "--include_diverged", "--format", "csv")
        self.assertIn("1000,9,9", with_div)

    @unittest.skipUnless(os.path.exists("/dev/full"), "no /dev/full")
    def test_output_that_cannot_be_written_is_an_error(self):
        """A table sent to a full disk exits 1 and says so: a short table.csv behind status 0 reads as whole."""
        for program, args in ((ANALYZE, ["summary", self.main, "--by", "lr", "--format", "csv"]),
                              (ANALYZE, ["--help"]), (DATA_TOOL, ["summary", "--data_dir", self.data])):
            with open("/dev/full", "w") as full:
                r = subprocess.run([program, *args], stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
            name = os.path.basename(program)
            self.assertEqual((r.returncode, r.stderr.splitlines()[-1:]),
                             (1, [f"{name}: error: writing its standard output failed: what it printed is incomplete"]),
                             (args, r.stderr))

    def test_latex_tables(self):
        """--format latex: a booktabs tabular per table, with the CSV's cells, LaTeX's special characters escaped,
        a number's sign a minus, the title and notes as comments."""
        args = ["compare", self.main, "--factor", "overlap", "--within", "sync_period", "--where", "lr=0.05"]
        tex = self.analyze(*args, "--format", "latex")
        tabulars = re.findall(r"\\begin\{tabular\}\{(lr*)\}\n\\toprule\n(.*?)\n\\midrule\n(.*?)\\bottomrule\n"
                              r"\\end\{tabular\}\n", tex, re.S)
        self.assertEqual(len(tabulars), 2, tex)
        # The title and notes as comments: nothing escaped.
        self.assertIn("% omnibus tests of final_test_accuracy across overlap\n", tex)
        self.assertIn("% marks: *** p < 0.001", tex)
        # The CSV: the tables one after the other, each header and its rows.
        csv_rows = list(csv.reader(io.StringIO(self.analyze(*args, "--format", "csv"))))

        def unescape(cell):
            if cell == "--":  # no value
                return "-"
            cell = cell.replace("$-$", "-").replace("\\textless{}", "<").replace("\\textgreater{}", ">")
            return re.sub(r"\\([&%$#_{}])", r"\1", cell[2:] if cell.startswith("{}[") else cell)

        def cells(line):
            self.assertTrue(line.endswith(" \\\\"), line)
            return [unescape(c) for c in line[:-len(" \\\\")].split(" & ")]

        for columns, header, body in tabulars:
            headers = cells(header)
            self.assertEqual(headers, csv_rows.pop(0))
            self.assertEqual(columns, "l" + "r" * (len(headers) - 1))
            for line in body.strip().split("\n"):
                self.assertEqual(cells(line), csv_rows.pop(0))
        self.assertEqual(csv_rows, [])
        self.assertIn("sync\\_period=1 &", tex)
        self.assertIn("95\\% CI of b - a (fraction)", tex)  # a hyphen between words stays one
        self.assertIn("Kruskal-Wallis & ", tex)
        self.assertRegex(tex, r"Kruskal-Wallis & [0-9.]+ & 1 & -- & ")  # no df2: an en dash
        self.assertRegex(tex, r"\{\}\[(\$-\$)?[0-9.]+, (\$-\$)?[0-9.]+\]")
        # Where TeX is installed (not a dependency: texlive-latex-recommended has booktabs), it typesets.
        has_booktabs = shutil.which("kpsewhich") and subprocess.run(["kpsewhich", "booktabs.sty"],
                                                                    capture_output=True).returncode == 0
        if shutil.which("pdflatex") and has_booktabs:
            folder = os.path.join(self.tmp, "latex")
            os.makedirs(folder, exist_ok=True)
            with open(os.path.join(folder, "t.tex"), "w") as f:
                f.write("\\documentclass{article}\n\\usepackage{booktabs}\n\\begin{document}\n\\tiny\n" + tex +
                        self.analyze("anova", self.main, "--factors", "overlap,sync_period", "--format", "latex") +
                        "\\end{document}\n")
            r = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "t.tex"], cwd=folder,
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(r.returncode, 0, r.stdout[-3000:])
            print("typeset by pdflatex", file=sys.stderr)

    def test_a_period_of_never_reads_never(self):
        # The index stores it as -1; tables, --where and plots say never.
        rows = list(csv.DictReader(io.StringIO(self.analyze("summary", self.periods, "--by", "sync_period",
                                                            "--format", "csv"))))
        self.assertEqual([r["sync_period"] for r in rows], ["1", "never"])
        out = self.analyze("summary", self.periods, "--by", "seed", "--where", "sync_period=never")
        self.assertIn("summary of final_test_accuracy", out)
        self.assertEqual(self.analyze("summary", self.periods, "--by", "seed", "--where", "sync_period>0"),
                         self.analyze("summary", self.periods, "--by", "seed", "--where", "sync_period=1"))
        need_gnuplot(self)
        out = self.analyze("plot", self.periods, "--kind", "summary", "--by", "sync_period",
                           "--output", os.path.join(self.tmp, "periods.png"))
        self.assertIn("sync_period=never has no place on a numeric axis: left out of the plot", out)
        out = self.analyze("plot", self.main, "--kind", "summary", "--by", "workload,overlap",
                           "--output", os.path.join(self.tmp, "text.png"), status=2)
        self.assertIn("the first --by key, workload, has no numeric value (mlp-mnist)", out)

    def test_a_where_that_keeps_no_run_names_the_condition_and_the_values_there(self):
        # It said only "no run matches the --where conditions".
        out = self.analyze("summary", self.periods, "--where", "seed=1", "--where", "sync_period=4", status=2)
        self.assertIn("'sync_period=4' keeps none of the 2 runs the conditions before it kept; "
                      "sync_period takes 1, never there", out)
        out = self.analyze("summary", self.periods, "--where", "seed>2", status=2)
        self.assertIn("'seed>2' keeps none of the 4 runs; seed takes 1, 2 there", out)

    def test_units_come_from_the_files(self):
        # Index columns: their units attributes; series at a point: the run files' (L2 norm);
        # dimensionless ("1") prints as no unit.
        self.assertIn("mean (s)", self.analyze("summary", self.main, "--by", "lr", "--metric", "wall_time_s"))
        out = self.analyze("summary", self.main, "--by", "lr", "--where", "lr=0.05", "--metric",
                           "worker_divergence@epoch=1")
        self.assertIn("mean (L2 norm)", out)
        out = self.analyze("curves", self.main, "--where", "lr=0.05", "--series", "test_loss")
        self.assertIn("mean (nats)", out)

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

    def test_runs_lists_each_run_with_the_keys_that_differ(self):
        rows = list(csv.DictReader(io.StringIO(self.analyze("runs", self.main, "--format", "csv"))))
        self.assertEqual(len(rows), 18)
        self.assertEqual(list(rows[0].keys()), ["run_id", "status", "lr", "overlap", "sync_period", "seed",
                                                "final_test_accuracy (fraction)"])
        self.assertEqual(sorted({r["status"] for r in rows}), ["completed", "diverged"])
        with h5py.File(os.path.join(self.main, "index.h5"), "r") as f:
            truth = dict(zip(f["index"]["run_id"].asstr()[()], f["index"]["final_test_accuracy"][()]))
        for r in rows:
            if r["status"] == "completed":
                self.assertAlmostEqual(float(r["final_test_accuracy (fraction)"]), truth[r["run_id"]], places=4)
        # Sorted by the keys' values, numbers as numbers, seeds last.
        self.assertEqual([(r["lr"], r["overlap"], r["sync_period"], r["seed"]) for r in rows[:3]],
                         [("0.05", "0", "1", "1"), ("0.05", "0", "1", "2"), ("0.05", "0", "1", "3")])
        out = self.analyze("runs", self.main, self.batch, "--by", "batch_size", "--where", "seed=1")
        self.assertIn("study_dir", out)
        self.assertIn("--by 'nokey' is not a column", self.analyze("runs", self.main, "--by", "nokey", status=2))

    def test_groups_that_pool_other_run_keys_say_so(self):
        # main sweeps overlap, sync_period and lr: grouping by overlap alone mixes the others.
        # Its lr 1000 runs diverged: among the completed runs (those the figures use) lr is one value.
        out = self.analyze("summary", self.main, "--by", "overlap")
        self.assertIn("# pooled over sync_period (1, 4): each group mixes runs of these values", out)
        out = self.analyze("compare", self.main, "--factor", "overlap", "--within", "sync_period")
        self.assertNotIn("pooled", out)
        self.assertIn("pooled over sync_period", self.analyze("curves", self.main, "--by", "overlap"))
        self.assertNotIn("pooled", self.analyze("summary", self.main, "--by", "overlap,sync_period,lr"))
        need_gnuplot(self)
        self.assertIn("# pooled over sync_period", self.analyze("plot", self.main, "--kind", "summary", "--by", "overlap",
                                                              "--output", os.path.join(self.tmp, "pooled.png")))
        # Seeds are the replicates, never a pooling.
        self.assertNotIn("pooled", self.analyze("summary", self.batch, "--by", "batch_size"))

    @unittest.skipUnless(SIMPLE_CNN, "no second workload given")
    def test_a_study_of_two_workloads_pools_them_unless_grouped(self):
        out = os.path.join(self.tmp, "two")
        for exe in (EXE, SIMPLE_CNN):
            subprocess.run([exe, "--data_dir", self.data, "--dataset", "mnist", "--epochs", "1", "--batch_size", "20",
                            "--name", "models", "--output", out, "--quiet"], check=True, stdout=subprocess.DEVNULL)
        study = os.path.join(out, "models")
        rows = list(csv.DictReader(io.StringIO(self.analyze("runs", study, "--format", "csv"))))
        self.assertEqual(sorted(r["workload"] for r in rows), ["mlp-mnist", "simple-cnn"])
        self.assertEqual(sorted(r["hidden"] for r in rows), ["", "512,512"])  # an MLP option
        self.assertIn("# pooled over hidden (-, 512,512); workload (mlp-mnist, simple-cnn)",
                      self.analyze("summary", study, "--by", "dataset"))
        # hidden goes with the workload: grouped by it, nothing is pooled.
        self.assertNotIn("pooled", self.analyze("summary", study, "--by", "workload"))

    def test_edge_cases_are_messages_not_crashes(self):
        out = self.analyze("summary", self.main, "--by", "overlap", "--where", "seed=1", "--where", "lr=0.05",
                           "--where", "sync_period=1")
        self.assertIn("n = 1, no variance and no confidence interval", out)
        out = self.analyze("compare", self.main, "--factor", "overlap", "--where", "seed=1", "--where", "lr=0.05",
                           "--where", "sync_period=1")
        self.assertIn("needs at least 2 values per group, got 1", out)
        out = self.analyze("summary", self.main, "--by", "overlap", "--metric", "steps", "--where", "lr=0.05")
        self.assertIn("every value is the same", out)
        out = self.analyze("compare", self.main, "--factor", "overlap", "--metric", "steps", "--where", "lr=0.05",
                           "--where", "sync_period=1")
        self.assertIn("ANOVA", out)  # identical values: no p-value, no crash
        out = self.analyze("summary", self.main, "--by", "overlap", "--metric", "accuracy", status=2)
        self.assertIn("metric 'accuracy' does not exist; numeric columns:", out)  # nothing close: no suggestion
        self.assertIn("metric 'final_test_acuracy' does not exist; did you mean 'final_test_accuracy'?",
                      self.analyze("summary", self.main, "--metric", "final_test_acuracy", status=2))
        self.assertIn("final_test_accuracy", out)
        out = self.analyze("summary", os.path.join(self.tmp, "main", "runs"), "--by", "overlap", status=2)
        self.assertIn("not a study folder (no index.h5)", out)
        out = self.analyze("summary", self.main, "--by", "overlapp", status=2)
        self.assertIn("grouping key 'overlapp' is not a column of the index; did you mean 'overlap'? Columns:", out)
        self.analyze("summary", self.main, "--by", "overlap", "--where", "lr=7", status=2)
        # Comparisons as in a study's exclude rules: numbers as numbers.
        rows = list(csv.DictReader(io.StringIO(self.analyze(
            "summary", self.main, "--by", "lr", "--where", "lr<1000", "--format", "csv"))))
        self.assertEqual([r["lr"] for r in rows], ["0.05"])
        rows = list(csv.DictReader(io.StringIO(self.analyze(
            "summary", self.main, "--by", "lr", "--where", "lr!=0.05", "--where", "lr>=1000", "--format", "csv"))))
        self.assertEqual([r["lr"] for r in rows], ["1000"])
        for bad, message in (("lr>=", "expected a value after '>='"), ("lr!5", "'!' without '='"),
                             ("=5", "expected KEY=VALUE")):
            self.assertIn(message, self.analyze("summary", self.main, "--by", "lr", "--where", bad, status=2))
        for args, message in (
                (["compare", "--factor", "overlap", "--baseline", "0.7"], "--baseline: '0.7' is not a level of overlap"),
                # A key the study did not sweep has nothing to compare (it printed empty tables).
                (["compare", "--factor", "workers"], "--factor 'workers' has one value (2) in the 18 runs read"),
                (["power", "--factor", "overlap", "--where", "overlap=0"], "--factor 'overlap' has one value (0) in"),
                (["anova", "--factors", "overlap,workers"], "--factors 'workers' has one value (2)"),
                (["summary", "--by", "overlap,overlap"], "--by: 'overlap,overlap' names 'overlap' twice"),
                (["anova", "--factors", "lr,lr"], "--factors: 'lr,lr' names 'lr' twice"),
                (["compare", "--factor", "overlap", "--within", "lr,overlap"],
                 "--within: 'lr,overlap' names 'overlap', which is also compared"),
                (["power", "--factor", "overlap", "--effect", "-1"], "--effect: '-1' must be a standardised effect"),
                (["power", "--factor", "overlap", "--effect", "inf"], "--effect: 'inf' must be a standardised effect"),
                (["power", "--factor", "overlap", "--alpha", "5"], "--alpha: '5' must be in (0, 0.5)"),
                (["power", "--factor", "overlap", "--hazard_ratio", "2"],
                 "--hazard_ratio: the log-rank test is of a time to a goal, not of final_test_accuracy"),
                (["power", "--factor", "overlap", "--metric", "steps_to_goal", "--hazard_ratio", "1"],
                 "--hazard_ratio: '1' must be a hazard ratio > 0 other than 1"),
                (["compare", "--factor", "overlap", "--hazard_ratio", "2"], "--hazard_ratio 2: compare does not read it"),
                (["report", "--by", "overlap", "--factor", "overlap", "--hazard_ratio", "2", "--output", "r"],
                 "--hazard_ratio: report uses it in the power of the comparisons of --factor of a time to a goal"),
                (["report", "--by", "overlap", "--target", "0.5", "--hazard_ratio", "2", "--output", "r"],
                 "give --factor F and --target T"),
                (["steps-to-result", "--target", "90"], "--target: '90' must be in (0, 1]: test_accuracy is a fraction"),
                (["summary", "--by", "overlap", "--metric", "test_accuracy@step=ten"],
                 "'ten' is not a number of steps"),
                (["plot", "--kind", "summary", "--by", "overlap", "--output", os.path.join(self.tmp, "no", "x.png")],
                 "is in a folder that does not exist or cannot be written"),
                # A point between evaluations names where they are; a series without values says why.
                (["summary", "--metric", "test_accuracy@step=3"],
                 "has no evaluation at step 3 (its evaluations are at step 2, 4, 6, 8, 10)"),
                (["summary", "--metric", "val_accuracy@step=2"],
                 "has no value of val_accuracy at any evaluation (it was trained without a validation split)"),
                (["curves", "--series", "accuracy"], "eval series 'accuracy' does not exist; series: "),
                (["summary", "--format", "xml"], "--format: 'xml' is not one of: table, markdown, csv, json, latex"),
                (["plot", "--kind", "bars", "--output", "x.png"],
                 "--kind: 'bars' is not one of: summary, curves, reach, steps, best_lr, scaling")):
            out = self.analyze(args[0], self.main, *args[1:], status=2)
            self.assertIn(message, out)
        out = self.analyze("summary", self.batch, "--where", "batch_size=5", "--metric", "test_accuracy@step=3",
                           status=2)
        self.assertIn("(its evaluations are at step 2, 4, 6, 8, ..., 18, 20)", out)
        # --test_every: evaluations of the validation split alone.
        subprocess.run([EXE, "--data_dir", self.data, "--dataset", "mnist", "--epochs", "1", "--output", self.tmp,
                        "--quiet", "--workers", "2", "--batch_size", "10", "--eval_every", "2", "--test_every", "4",
                        "--validation_fraction", "0.1", "--name", "test-every"], check=True, stdout=subprocess.DEVNULL)
        out = self.analyze("summary", os.path.join(self.tmp, "test-every"), "--metric", "test_accuracy@step=2",
                           status=2)
        self.assertIn("has no value of test_accuracy at step 2 (the evaluation there skipped the test split: "
                      "--test_every)", out)
        self.assertIn("usage: dpstudy-analyze COMMAND", self.analyze(status=2))

    def test_damaged_files_are_refused_not_read_past(self):
        # Columns of one group with different lengths (a file edited by hand, or
        # damaged): read past their end before, now a message naming the file.
        damaged = os.path.join(self.tmp, "damaged")
        shutil.copytree(self.periods, damaged)
        with h5py.File(os.path.join(damaged, "index.h5"), "r") as f:
            first = f["index/run_id"][0].decode()
        with h5py.File(os.path.join(damaged, "runs", first + ".h5"), "r+") as f:
            steps = len(f["eval/step"])
            del f["eval/test_accuracy"]
            f["eval/test_accuracy"] = [0.5] * (steps + 1000)
        message = f"runs/{first}.h5: eval/test_accuracy has {steps + 1000} values, eval/step has {steps}: " \
                  "expected one value per step (a damaged or edited run file)"
        for args in (["curves", "--by", "sync_period"], ["summary", "--metric", "test_accuracy@last=2"],
                     ["summary", "--metric", "test_accuracy@step=2"]):
            self.assertIn(message, self.analyze(args[0], damaged, *args[1:], status=1))
        with h5py.File(os.path.join(damaged, "index.h5"), "r+") as f:
            workers = f["index/workers"][()]
            del f["index/workers"]
            f["index/workers"] = workers[:1]
        self.assertRegex(self.analyze("runs", damaged, status=1),
                         r"index.h5: column '\w+' has \d+ rows, '\w+' \d+: expected one row per run")
        # An index without its run ids, and a file that is no index (another schema's).
        index = os.path.join(damaged, "index.h5")
        with h5py.File(index, "r+") as f:
            del f["index/workers"]
            del f["index/run_id"]
        self.assertIn(f"{index}: no run_id column (a damaged or edited index; running the study again rebuilds it)",
                      self.analyze("runs", damaged, status=1))
        with h5py.File(index, "r+") as f:
            f.attrs["schema"] = "dpstudy.run/1"
            del f.attrs["text_crc32"]  # an edited text: else a damaged file
        self.assertIn(f"{index}: not a dpstudy.index/1 index", self.analyze("summary", damaged, status=2))

    def test_run_files_the_index_does_not_list_are_named(self):
        # The runs read are the index's rows: a study stopped between writing a run's
        # file and indexing it (a full disk, a kill) left that run out silently before.
        study = os.path.join(self.tmp, "unindexed")
        shutil.copytree(self.periods, study)
        runs = os.path.join(study, "runs")
        ids = sorted(f[:-3] for f in os.listdir(runs) if f.endswith(".h5") and ".ckpt." not in f)
        self.assertEqual(len(ids), 4)
        self.assertNotIn("warning", self.analyze("summary", study))
        aside = os.path.join(self.tmp, ids[0] + ".h5")
        os.rename(os.path.join(runs, ids[0] + ".h5"), aside)
        subprocess.run([EXE, "--output", self.tmp, "--name", "unindexed", "--rebuild_index"], check=True,
                       stdout=subprocess.DEVNULL)
        os.rename(aside, os.path.join(runs, ids[0] + ".h5"))
        os.remove(os.path.join(runs, ids[1] + ".h5"))
        with open(os.path.join(runs, ids[2] + ".h5"), "rb") as f, open(os.path.join(runs, "0" * 16 + ".h5"), "wb") as g:
            g.write(f.read(3000))  # a truncated copy: not a run file
        out = self.analyze("summary", study, "--format", "csv")
        self.assertEqual(next(csv.DictReader(io.StringIO(out.split("dpstudy-analyze: warning")[0])))["n"], "3")
        self.assertIn(f"warning: {study}: 1 complete run file(s) in runs/ not in index.h5 ({ids[0]}.h5), left out "
                      "here", out)
        self.assertIn(f"warning: {study}: 1 run file(s) in runs/ not readable as results ({'0' * 16}.h5)", out)
        self.assertIn(f"warning: {study}/index.h5: 1 indexed run(s) without a file in runs/ ({ids[1]}.h5)", out)
        report = os.path.join(self.tmp, "unindexed-report")
        self.analyze("report", study, "--by", "sync_period", "--output", report)
        with open(os.path.join(report, "report.md")) as f:
            self.assertIn(f"**Warning**: {study}: 1 complete run file(s) in runs/ not in index.h5", f.read())
        # The command the warning gives indexes the file and drops the row of the deleted one.
        command = shlex.split(re.search(r"Index them with `([^`]+)`", out).group(1))
        self.assertEqual(command[0], "dpstudy-mlp-mnist")
        subprocess.run([EXE] + command[1:], check=True, stdout=subprocess.DEVNULL)
        os.remove(os.path.join(runs, "0" * 16 + ".h5"))
        out = self.analyze("summary", study, "--format", "csv")
        self.assertNotIn("warning", out)
        self.assertEqual(next(csv.DictReader(io.StringIO(out)))["n"], "3")
        # A copied folder's index names the study it was copied from: the command names the
        # folder (it gave --name unindexed for a folder named moved, and indexed the other).
        moved = os.path.join(self.tmp, "moved")
        shutil.copytree(study, moved)
        shutil.copy(os.path.join(self.periods, "runs", ids[1] + ".h5"), os.path.join(moved, "runs"))
        command = shlex.split(re.search(r"Index them with `([^`]+)`", self.analyze("summary", moved)).group(1))
        self.assertEqual(command[command.index("--name") + 1], "moved")
        self.assertEqual(command[command.index("--output") + 1], self.tmp)
        # Read as "." from inside it: "." names no study (--name . was refused).
        r = subprocess.run([ANALYZE, "summary", "."], capture_output=True, text=True, timeout=120, cwd=moved)
        command = shlex.split(re.search(r"Index them with `([^`]+)`", r.stderr).group(1))
        self.assertEqual(command[command.index("--name") + 1], "moved")
        self.assertEqual(command[command.index("--output") + 1], os.path.realpath(self.tmp))
        shutil.rmtree(moved)

    def test_a_folder_without_an_index_is_told_by_what_it_holds(self):
        # Each was "not a study folder (no index.h5)".
        out = self.analyze("summary", self.tmp, status=2)  # the results root, --output
        self.assertRegex(out, r"a results folder holding \d+ studies \(.*\), not a study; give one or several of "
                              r"them, e.g. " + re.escape(self.tmp) + "/")
        busy = os.path.join(self.tmp, "busy")
        os.makedirs(os.path.join(busy, "runs"))
        open(os.path.join(busy, "runs", "0123456789abcdef.claim"), "w").close()
        out = self.analyze("summary", busy, status=2)
        self.assertIn(f"{busy}: no run of this study has finished yet (runs/ holds 1 run(s) being trained", out)
        shutil.rmtree(busy)
        lost = os.path.join(self.tmp, "lost-index")
        shutil.copytree(self.periods, lost)
        os.remove(os.path.join(lost, "index.h5"))
        out = self.analyze("summary", lost, status=2)
        self.assertIn(f"{lost}: 4 complete run file(s) in runs/ but no index.h5 (removed?); index them with `", out)
        command = shlex.split(re.search(r"index them with `([^`]+)`", out).group(1))
        self.assertEqual(command[0], "dpstudy-mlp-mnist")
        subprocess.run([EXE] + command[1:], check=True, stdout=subprocess.DEVNULL)
        self.assertEqual(next(csv.DictReader(io.StringIO(self.analyze("summary", lost, "--format", "csv"))))["n"], "4")
        shutil.rmtree(lost)
        # A study of --mode throughput alone, as the README's speed example makes.
        subprocess.run([EXE, "--data_dir", self.data, "--dataset", "mnist", "--mode", "throughput", "--iterations",
                        "2", "--output", self.tmp, "--name", "speed", "--quiet"], check=True, capture_output=True)
        speed = os.path.join(self.tmp, "speed")
        out = self.analyze("summary", speed, status=2)
        self.assertIn(f"{speed}: holds the throughput table of --mode throughput ({speed}/throughput.h5) but no "
                      f"trained run (no index.h5): `dpstudy-analyze throughput {speed}` tabulates it", out)
        self.assertIn("speed-up (x)", self.analyze("throughput", speed))
        shutil.rmtree(speed)
        # A study tools/dpstudy-slurm submitted, not yet trained: its batch script and Slurm's output.
        queued = os.path.join(self.tmp, "queued")
        os.makedirs(queued)
        out = self.analyze("summary", queued, status=2)
        self.assertIn(f"{queued}: an empty folder, not a study (no index.h5)", out)
        open(os.path.join(queued, "slurm.sbatch"), "w").close()
        out = self.analyze("summary", queued, status=2)
        self.assertIn(f"{queued}: no run of this study has started yet (no runs/, no index.h5); it holds "
                      "tools/dpstudy-slurm's batch script slurm.sbatch: the job is waiting", out)
        open(os.path.join(queued, "slurm-4711.out"), "w").close()
        self.assertIn("slurm.sbatch and 1 Slurm job output(s) slurm-*.out", self.analyze("summary", queued, status=2))
        shutil.rmtree(queued)
        self.assertIn(f"{queued}: no such folder", self.analyze("summary", queued, status=2))
        index = os.path.join(self.periods, "index.h5")
        self.assertIn(f"{index}: the study's index; give the study folder that holds it, {self.periods}",
                      self.analyze("summary", index, status=2))
        run_file = glob.glob(os.path.join(self.periods, "runs", "*.h5"))[0]
        self.assertIn(f"{run_file}: a file, not a study folder", self.analyze("summary", run_file, status=2))

    def test_a_study_with_no_finished_run_says_so(self):
        # Its index lists no run yet: "no run_id column (a damaged or edited index)" before.
        os.makedirs(os.path.join(self.tmp, "started", "runs"))
        subprocess.run([EXE, "--output", self.tmp, "--name", "started", "--rebuild_index"], check=True,
                       stdout=subprocess.DEVNULL)
        started = os.path.join(self.tmp, "started")
        out = self.analyze("summary", started, status=2)
        self.assertIn(f"warning: {started}/index.h5: lists no finished run yet", out)
        self.assertIn(f"error: no finished run to analyse in {started}", out)
        # Beside a study that has runs, it adds none.
        out = self.analyze("summary", started, self.periods, "--format", "csv")
        self.assertEqual(next(csv.DictReader(io.StringIO(out.split("dpstudy-analyze: warning")[0])))["n"], "4")

    def test_runs_trained_on_other_copies_of_the_data_are_named(self):
        # The study "periods" again on other files of one dataset (another machine's copy, say):
        # read together, every group pooled runs of different data silently.
        other_data = make_fixtures(DATA_TOOL, os.path.join(self.tmp, "other-data"), 240, 50)
        subprocess.run([EXE, "--data_dir", other_data, "--dataset", "mnist", "--epochs", "1", "--output",
                        os.path.join(self.tmp, "other-machine"), "--quiet", "--workers", "2", "--eval_every", "2",
                        "--name", "periods", "--batch_size", "10", "--sync_period", "1,never", "--seeds", "2",
                        "--device", "cpu"], check=True, stdout=subprocess.DEVNULL)
        elsewhere = os.path.join(self.tmp, "other-machine", "periods")
        self.assertNotIn("warning", self.analyze("summary", self.periods, "--by", "sync_period"))
        with h5py.File(os.path.join(self.periods, "index.h5"), "r") as f:
            here = f["index/data_digest"][0].decode()
        with h5py.File(os.path.join(elsewhere, "index.h5"), "r") as f:
            there = f["index/data_digest"][0].decode()
        self.assertRegex(here, r"^[0-9a-f]{16}$")
        self.assertNotEqual(here, there)
        # dpstudy-data names the digest of the files it finds: which copy was this?
        for folder, digest in ((self.data, here), (other_data, there)):
            summary = subprocess.run([DATA_TOOL, "summary", "mnist", "--data-dir", folder], capture_output=True,
                                     text=True, check=True).stdout
            self.assertIn(f"# data_digest (a study index's column for runs on these files): mnist {digest}\n", summary)
        out = self.analyze("summary", self.periods, elsewhere, "--by", "sync_period")
        first, second = sorted([here, there])
        self.assertIn(f"warning: the runs of dataset mnist were trained on 2 different sets of its files (data_digest "
                      f"{first}: 4 run(s), {second}: 4 run(s)); a group that mixes them pools runs of different data",
                      out)
        # runs shows which run was trained on which files.
        rows = list(csv.DictReader(io.StringIO(self.analyze("runs", self.periods, elsewhere, "--format", "csv")
                                               .split("dpstudy-analyze: warning")[0])))
        self.assertEqual(sorted(row["data_digest"] for row in rows), [first] * 4 + [second] * 4)
        # A report says what its runs were trained on.
        report = os.path.join(self.tmp, "other-machine-report")
        self.analyze("report", self.periods, elsewhere, "--by", "sync_period", "--output", report)
        with open(os.path.join(report, "report.md")) as f:
            self.assertIn(f"Data: mnist (data_digest {first}: 4 runs), mnist (data_digest {second}: 4 runs).", f.read())
        # Kept apart, or one kept: no warning.
        out = self.analyze("compare", self.periods, elsewhere, "--factor", "data_digest", "--within", "sync_period",
                           "--format", "csv")
        self.assertIn("data_digest", out)
        self.assertNotIn("warning", out)
        self.assertNotIn("warning", self.analyze("summary", self.periods, elsewhere, "--where", f"data_digest={here}"))

    def test_shared_runs_fill_every_cell_and_count_once(self):
        # One worker's overlap and sync period change nothing: its runs are shared by
        # both sync periods (docs/studies.md#shared-runs). Coarse units, pool overlap:
        # the two workers' shards of scheme 2, with their class counts in the index.
        out = os.path.dirname(self.main)
        cmd = [EXE, "--data_dir", self.data, "--dataset", "mnist", "--epochs", "1", "--output", out, "--quiet",
               "--name", "shared", "--batch_size", "10", "--workers", "1,2", "--sync_period", "1,4",
               "--granularity", "coarse", "--overlap", "0.5", "--seeds", "2", "--device", "cpu"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("# shared: 8 cells, 6 distinct runs (2 shared)", r.stdout)
        folder = os.path.join(out, "shared")
        with h5py.File(os.path.join(folder, "index.h5"), "r") as f:
            ix = f["index"]
            self.assertEqual(len(ix["run_id"]), 6)
            self.assertEqual(set(ix["assignment_scheme"][()]), {2})
            workers, skew = ix["workers"][()], ix["class_skew"][()]
            counts = [c.decode() for c in ix["shard_class_counts"][()]]
        for w, k, c in zip(workers, skew, counts):
            self.assertEqual(len(c.split(";")), w)  # one row of class counts per shard
            self.assertTrue(0 <= k < (0.05 if w == 1 else 1), (w, k))  # one shard: the global mix
        rows = list(csv.DictReader(io.StringIO(self.analyze("summary", folder, "--by", "workers,sync_period",
                                                            "--format", "csv").split("\n#")[0])))
        self.assertEqual([(r["workers"], r["sync_period"], r["n"]) for r in rows],
                         [("1", "1", "2"), ("1", "4", "2"), ("2", "1", "2"), ("2", "4", "2")])
        self.assertEqual(rows[0]["mean (fraction)"], rows[1]["mean (fraction)"])
        self.assertIn("shared runs are listed under every cell they stand for",
                      self.analyze("summary", folder, "--by", "workers,sync_period"))
        # compare counts the shared runs once: no one-worker family of 1 against 4.
        table = self.analyze("compare", folder, "--factor", "sync_period", "--within", "workers", "--format", "csv")
        families = [row["family"] for row in csv.DictReader(io.StringIO(table.split("\n#")[0]))]
        self.assertIn("workers=2", families)
        self.assertNotIn("workers=1", families)
        # As a family key it stands in every family it is shared by, once in each.
        table = self.analyze("compare", folder, "--factor", "workers", "--within", "sync_period", "--format", "csv")
        pairwise = table[table.index("family,workers a"):].split("\n#")[0]  # the second table
        pairs = [(row["family"], row["n a"], row["n b"]) for row in csv.DictReader(io.StringIO(pairwise))]
        self.assertEqual(pairs, [("sync_period=1", "2", "2"), ("sync_period=4", "2", "2")])
        # A run file of scheme 1 (no /assignment@scheme) among them is warned of.
        two = [p for p in glob.glob(os.path.join(folder, "runs", "*.h5"))
               if h5py.File(p, "r")["config"].attrs["workers"] == 2]
        with h5py.File(two[0], "r+") as f:
            del f["assignment"].attrs["scheme"]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        self.assertRegex(self.analyze("summary", folder, "--by", "workers"),
                         r"warning: 1 run\(s\) are of assignment scheme 1: .*; they are read beside 5 run\(s\) of "
                         r"scheme 2")

    def test_runs_of_another_libtorch_are_named(self):
        # A copy of "periods" one of whose runs an older LibTorch made (as after a
        # Spack upgrade midway): the index's libtorch column, from each run's provenance.
        folder = os.path.join(self.tmp, "upgraded", "periods")
        shutil.copytree(self.periods, folder)
        runs = sorted(glob.glob(os.path.join(folder, "runs", "*.h5")))
        with h5py.File(runs[0], "r+") as f:  # edited texts: their checksum goes (else: a damaged file)
            f["provenance"].attrs["libtorch"] = "1.0.0"
            del f["provenance"].attrs["text_crc32"]
        # The study again (all complete) rewrites its index from the run files.
        rerun = [EXE, "--data_dir", self.data, "--dataset", "mnist", "--epochs", "1", "--output",
                 os.path.dirname(folder), "--quiet", "--workers", "2", "--eval_every", "2", "--name", "periods",
                 "--batch_size", "10", "--sync_period", "1,never", "--seeds", "2", "--device", "cpu"]
        subprocess.run(rerun, check=True, stdout=subprocess.DEVNULL)
        with h5py.File(os.path.join(folder, "index.h5"), "r") as f:
            versions = sorted(v.decode() for v in f["index/libtorch"][()])
            self.assertTrue(all(b.decode() for b in f["index/blas_build"][()]))
        self.assertEqual(len(versions), 4)
        self.assertEqual(versions[0], "1.0.0")
        self.assertEqual(len(set(versions[1:])), 1)
        # A group that mixes them is warned of; runs lists which run was made with which.
        warning = (r"warning: the runs read were made with 2 LibTorch or BLAS builds \(LibTorch 1\.0\.0, .*: "
                   r"1 run\(s\); LibTorch " + re.escape(versions[1]) + r", .*: 3 run\(s\)\): a group that mixes "
                   r"them pools runs that do not reproduce each other bit for bit")
        self.assertRegex(self.analyze("summary", folder, "--by", "sync_period"), warning)
        rows = list(csv.DictReader(io.StringIO(self.analyze("runs", folder, "--format", "csv")
                                               .split("dpstudy-analyze: warning")[0])))
        self.assertEqual(sorted(row["libtorch"] for row in rows), versions)
        # Kept apart, or no group mixing them (one run per seed and period): no warning.
        self.assertNotIn("warning", self.analyze("summary", folder, "--by", "libtorch"))
        self.assertNotIn("warning", self.analyze("runs", folder, "--where", "libtorch!=1.0.0"))
        self.assertNotIn("warning", self.analyze("summary", folder, "--by", "sync_period,seed"))
        # A run file older than blas_build (none recorded) is not taken for another build.
        with h5py.File(runs[0], "r+") as f:
            f["provenance"].attrs["libtorch"] = versions[1]
            del f["provenance"].attrs["blas_build"]
        subprocess.run(rerun, check=True, stdout=subprocess.DEVNULL)
        self.assertNotIn("warning", self.analyze("summary", folder, "--by", "sync_period"))
        # A run of another build of dpstudy (edited code, say): the index's dpstudy_build. (Its
        # git_changes as files before 2026-12-04 have it, without the changes' digest.)
        with h5py.File(runs[1], "r+") as f:
            f["provenance"].attrs["git_commit"] = "0123456789abcdef"
            f["provenance"].attrs["git_changes"] = "uncommitted"
            del f["provenance"].attrs["text_crc32"]
        subprocess.run(rerun, check=True, stdout=subprocess.DEVNULL)
        with h5py.File(os.path.join(folder, "index.h5"), "r") as f:
            builds = [v.decode() for v in f["index/dpstudy_build"][()]]
        self.assertEqual(len(set(builds)), 2)
        edited = [b for b in builds if "0123456789ab" in b]
        self.assertEqual(len(edited), 1)
        self.assertRegex(edited[0], r"^[0-9.]+ 0123456789ab with uncommitted changes$")
        # (2: runs[0]'s, whose BLAS build is not recorded, may be the other runs' build)
        warning = (r"warning: the runs read were made with 2 builds of LibTorch, the BLAS or dpstudy \(.*, dpstudy "
                   r"[0-9.]+ 0123456789ab with uncommitted changes: 1 run\(s\).*; the runs whose files do not record "
                   r"it all counted with a build they may be\): a group that mixes them pools runs "
                   r"that do not reproduce each other bit for bit \(nor train alike, if the code that trains changed\)"
                   r".*--factor dpstudy_build")
        self.assertRegex(self.analyze("summary", folder, "--by", "sync_period"), warning)
        self.assertNotIn("warning", self.analyze("summary", folder, "--by", "dpstudy_build"))
        # A run trained on a GPU: the index's gpu column ("none" on the CPU).
        with h5py.File(runs[2], "r+") as f:
            f["provenance"].attrs["gpu"] = "NVIDIA H200, compute 9.0, CUDA 13.0, cuDNN 9.19.0"
            del f["provenance"].attrs["text_crc32"]
        subprocess.run(rerun, check=True, stdout=subprocess.DEVNULL)
        with h5py.File(os.path.join(folder, "index.h5"), "r") as f:
            self.assertEqual(sorted(v.decode() for v in f["index/gpu"][()]),
                             ["NVIDIA H200, compute 9.0, CUDA 13.0, cuDNN 9.19.0"] + ["none"] * 3)
        warning = (r"warning: the runs read were made with 3 builds of LibTorch, the BLAS or dpstudy, or GPUs \(.*, "
                   r"GPU NVIDIA H200, compute 9\.0, CUDA 13\.0, cuDNN 9\.19\.0, dpstudy .*: 1 run\(s\)")
        self.assertRegex(self.analyze("summary", folder, "--by", "sync_period"), warning)
        self.assertNotIn("warning", self.analyze("summary", folder, "--by", "dpstudy_build,gpu"))
        # A run trained with LibTorch's other CPU kernels (another CPU kind, or ATEN_CPU_CAPABILITY
        # set): the index's cpu_kernels column.
        with h5py.File(runs[3], "r+") as f:
            here = f["provenance"].attrs["cpu_kernels"]
            other = "ATen NO AVX, oneDNN 2.6.3 sse41"
            f["provenance"].attrs["cpu_kernels"] = other
            del f["provenance"].attrs["text_crc32"]
        subprocess.run(rerun, check=True, stdout=subprocess.DEVNULL)
        with h5py.File(os.path.join(folder, "index.h5"), "r") as f:
            self.assertEqual(sorted(v.decode() for v in f["index/cpu_kernels"][()]), sorted([other] + [here] * 3))
        warning = (r"warning: the runs read were made with 4 builds of LibTorch, the BLAS or dpstudy, or sets of CPU "
                   r"kernels or GPUs \(.*, " + re.escape(other) + r", GPU none, dpstudy .*: 1 run\(s\)")
        self.assertRegex(self.analyze("summary", folder, "--by", "sync_period"), warning)
        self.assertNotIn("warning", self.analyze("summary", folder, "--by", "dpstudy_build,gpu,cpu_kernels"))

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
        self.assertIn("perfect scaling from batch_size 5 up to 5 (every step from the first reaching group)", out)
        rows = list(csv.DictReader(io.StringIO(self.analyze("steps-to-result", study, "--target", "0.5",
                                                             "--format", "csv"))))
        self.assertEqual([r["best (steps)"] for r in rows], ["10", "6", "4"])
        # Fewer than 3 batch sizes: no fit, and why.
        out = self.analyze("steps-to-result", study, "--target", "0.5", "--where", "batch_size<20")
        self.assertIn("critical batch size: no fit: 2 batch size(s) reached the target, the fit needs 3", out)

    def test_times_of_runs_trained_at_once_and_alone_are_told_apart(self):
        # Two runs' files say 3 runs shared their process (--runs_at_once): their times
        # measured a third of it. A time shown across both kinds warns; accuracies do not.
        study = os.path.join(self.tmp, "at-once")
        shutil.copytree(self.batch, study)
        for path in sorted(glob.glob(os.path.join(study, "runs", "*.h5")))[:2]:
            with h5py.File(path, "r+") as f:
                self.assertEqual(f["provenance"].attrs["runs_at_once"], 1)
                f["provenance"].attrs["runs_at_once"] = 3
        subprocess.run([EXE, "--rebuild_index", "--output", self.tmp, "--name", "at-once"], check=True,
                       stdout=subprocess.DEVNULL)
        warning = "the runs were trained with different numbers of runs at once in their process (runs_at_once 1: 4 " \
                  "run(s), 3: 2 run(s)): their times measured different shares of the device"
        self.assertIn(warning, self.analyze("steps-to-result", study, "--target", "0.5"))
        self.assertIn(warning, self.analyze("compare", study, "--factor", "batch_size", "--metric", "wall_time_s"))
        self.assertNotIn("runs at once", self.analyze("steps-to-result", study, "--target", "0.5", "--where",
                                                      "runs_at_once=1"))
        self.assertNotIn("runs at once", self.analyze("steps-to-result", study, "--target", "0.5", "--by",
                                                      "runs_at_once"))
        self.assertNotIn("runs at once", self.analyze("summary", study, "--by", "batch_size"))

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

    def test_curves_against_samples_and_time(self):
        # Against samples: each evaluation's step times workers x batch_size. Against time: the values of a
        # step pooled as against steps, at the mean time its runs reached it (runs never reach a step at the
        # same second: each point was one run's, n = 1, the "mean over runs" a zig-zag between them).
        def rows(x):
            out = self.analyze("curves", self.main, "--by", "sync_period", "--where", "lr=0.05", "--x", x,
                               "--format", "csv")
            return [r for r in csv.DictReader(io.StringIO(out)) if r["sync_period"] in ("1", "4")]
        steps, samples, times = rows("step"), rows("samples"), rows("time_s")
        self.assertEqual([float(r["samples"]) for r in samples], [float(r["step"]) * 2 * 10 for r in steps])
        reached = {}  # (sync_period, step) -> the times its runs reached it
        for path in glob.glob(os.path.join(self.main, "runs", "*.h5")):
            with h5py.File(path, "r") as f:
                if f["config"].attrs["lr"] != 0.05:
                    continue
                period, time_s = str(f["config"].attrs["sync_period"]), f["train"]["time_s"][()]
                for step in f["eval"]["step"][()]:
                    reached.setdefault((period, int(step)), []).append(float(time_s[step - 1]))
        self.assertEqual(len(times), len(steps))
        for at_time, at_step in zip(times, steps):
            self.assertEqual(at_time["n"], at_step["n"])
            self.assertEqual(at_time["mean (fraction)"], at_step["mean (fraction)"])
            ran = reached[(at_step["sync_period"], int(at_step["step"]))]
            self.assertEqual(len(ran), int(at_step["n"]))
            self.assertAlmostEqual(float(at_time["time_s"]), sum(ran) / len(ran), delta=1e-6 * max(ran))
        self.assertEqual({r["n"] for r in times}, {"6", "3"})  # 2 overlaps x 3 seeds at period 1, 3 seeds at 4
        self.assertIn("time_s: each evaluation at the mean time", self.analyze(
            "curves", self.main, "--by", "sync_period", "--where", "lr=0.05", "--x", "time_s"))
        self.analyze("curves", self.main, "--x", "wall", status=2)

    def test_report_holds_every_part_and_its_commands(self):
        folder = os.path.join(self.tmp, "report")
        self.analyze("report", self.main, "--by", "overlap,sync_period", "--factor", "overlap", "--where", "lr=0.05",
                     "--output", folder)
        with open(os.path.join(folder, "report.md"), encoding="utf-8") as f:
            text = f.read()
        for part in ("# main\n", "9 runs (9 completed)", "## Summary", "## Factorial ANOVA", "## Comparisons of overlap"):
            self.assertIn(part, text)
        need_gnuplot(self)
        for part in ("![summary by overlap, sync_period](summary.png)", "![curves by overlap, sync_period](curves.png)"):
            self.assertIn(part, text)
        for png in ("summary.png", "curves.png"):
            with open(os.path.join(folder, png), "rb") as f:
                self.assertTrue(f.read(8).startswith(b"\x89PNG"))
        # Each table is what its command, shown above it, prints.
        table = self.analyze("summary", self.main, "--where", "lr=0.05", "--by", "overlap,sync_period",
                             "--format", "markdown")
        self.assertIn("dpstudy-analyze summary " + self.main + " --where 'lr=0.05' --by overlap,sync_period", text)
        self.assertIn(table.strip(), text)
        # A third --by key: its tables keep it, and its figures draw a line per combination of the keys
        # after the first (6 here)...
        three = os.path.join(self.tmp, "report-three")
        self.analyze("report", self.main, "--by", "overlap,sync_period,seed", "--where", "lr=0.05", "--output", three)
        with open(os.path.join(three, "report.md"), encoding="utf-8") as f:
            text = f.read()
        self.assertNotIn("The figures show the first --by keys", text)
        self.assertIn("![summary by overlap, sync_period, seed](summary.png)", text)
        self.assertIn("| overlap | sync_period | seed |", text)
        # ... unless that is more than 8 lines (12 here): then the first two keys, the others pooled, and said so.
        four = os.path.join(self.tmp, "report-four")
        self.analyze("report", self.main, "--by", "overlap,sync_period,lr,seed", "--output", four)
        with open(os.path.join(four, "report.md"), encoding="utf-8") as f:
            text = f.read()
        self.assertIn("The figures show the first --by keys (their other keys' combinations would draw more than 8 "
                      "lines); each point pools the runs of every level of lr, seed", text)
        self.assertIn("![summary by overlap, sync_period](summary.png)", text)
        for args, message in ((["--by", "overlap"], "report needs --output FOLDER"),
                              (["--output", folder], "report needs --by K1")):
            self.assertIn(message, self.analyze("report", self.main, *args, status=2))

    def test_report_shows_the_options_each_part_read(self):
        # Options that change a part (diverged runs kept, the bands, the curves' series, a baseline, the
        # equivalence level) appear in that part's command, and each command run alone makes what the
        # report holds.
        folder = os.path.join(self.tmp, "report-options")
        self.analyze("report", self.main, "--by", "overlap,sync_period", "--factor", "overlap", "--where",
                     "lr<1", "--include_diverged", "--interval", "sd", "--series", "test_loss",
                     "--baseline", "0.5", "--equivalence", "0.5", "--alpha", "0.025", "--style", "band",
                     "--target", "1.5", "--hazard_ratio", "3", "--output", folder)
        with open(os.path.join(folder, "report.md"), encoding="utf-8") as f:
            text = f.read()
        commands = re.findall(r"```sh\ndpstudy-analyze (.*)\n```", text)
        self.assertEqual([c.split()[0] for c in commands],
                         ["summary", "anova", "compare", "power", "steps-to-result", "summary", "compare", "power",
                          "summary", "compare", "plot", "plot", "plot"])
        shown = dict(zip(["summary", "anova", "compare", "power", "steps", "reach summary", "reach compare",
                          "reach power", "time summary", "time compare", "plot summary", "plot curves", "plot reach"],
                         commands))
        # The comparisons' power: what these runs could have detected, of the final metric and of the steps.
        self.assertIn("## Power of the comparisons of overlap\n", text)
        self.assertIn("--baseline 0.5 --equivalence 0.5 --alpha 0.025 --factor overlap --within sync_period",
                      shown["power"])
        self.assertIn("## Power of the comparisons of overlap: steps to test_loss <= 1.5", text)
        self.assertIn("--metric 'test_loss@reach=1.5'", shown["reach power"])
        self.assertNotIn("--equivalence", shown["reach power"])
        self.assertIn("| detectable hazard ratio | detectable hazard ratio (simulated) | runs per group for hazard "
                      "ratio 3 | runs per group for hazard ratio 3 (simulated) |", text)
        # --hazard_ratio is the log-rank test's: the power of the steps takes it, that of the final loss not.
        self.assertIn("--hazard_ratio 3", shown["reach power"])
        self.assertNotIn("--hazard_ratio", shown["power"])
        self.assertIn("--kind reach", shown["plot reach"])
        self.assertIn("--series test_loss --target 1.5 --by overlap,sync_period --output reach.png",
                      shown["plot reach"])
        self.assertNotIn("--interval", shown["plot reach"])  # sd is for the means' figures, not Kaplan-Meier's
        self.assertIn("## Steps and time to test_loss <= 1.5", text)
        self.assertIn("--target 1.5 --by overlap,sync_period", shown["steps"])
        self.assertIn("--series test_loss", shown["steps"])
        self.assertIn("| fastest time (s) | median time (s) |", text)
        # The same steps with every run counted: Kaplan-Meier medians, and the log-rank test of --factor
        # (without the margin of --equivalence, which is in the unit of --metric); then the time, every run
        # counted too: a setting of more steps can get there sooner.
        for part, title, metric, unit in (("reach", "Steps", "reach", "step"), ("time", "Time", "reach_time", "s")):
            self.assertIn(f"## {title} to test_loss <= 1.5, every run counted", text)
            self.assertIn(f"--metric 'test_loss@{metric}=1.5'", shown[part + " summary"])
            self.assertIn(f"| KM median ({unit}) | KM ci95 low ({unit}) | KM ci95 high ({unit}) |", text)
            self.assertIn(f"## Comparisons of overlap: {title.lower()} to test_loss <= 1.5", text)
            self.assertIn(f"--baseline 0.5 --factor overlap --within sync_period --metric 'test_loss@{metric}=1.5'",
                          shown[part + " compare"])
            self.assertNotIn("--equivalence", shown[part + " compare"])
        self.assertIn("| log-rank |", text)
        self.assertIn("--include_diverged", shown["summary"])
        self.assertIn("--baseline 0.5 --equivalence 0.5 --alpha 0.025", shown["compare"])
        self.assertIn("--interval sd", shown["plot summary"])
        self.assertIn("--style band", shown["plot summary"])
        self.assertNotIn("--series", shown["plot summary"])
        self.assertIn("--series test_loss", shown["plot curves"])
        self.assertNotIn("--baseline", shown["summary"] + shown["anova"] + shown["plot curves"])
        self.assertIn("95% CI of b - a", text)  # 1 - 2 x 0.025
        need_gnuplot(self)
        alone = os.path.join(self.tmp, "report-options-alone")
        os.makedirs(alone)
        for command in commands:
            args = shlex.split(command)
            r = subprocess.run([ANALYZE, *args] + ([] if args[0] == "plot" else ["--format", "markdown"]),
                               capture_output=True, text=True, timeout=120, cwd=alone)
            self.assertEqual(r.returncode, 0, f"{command}: {r.stderr}")
            if args[0] != "plot":
                for table in r.stdout.strip().split("\n\n**"):
                    self.assertIn(table.strip().lstrip("*"), text, command)
        for png in ("summary.png", "curves.png", "reach.png"):
            with open(os.path.join(alone, png), "rb") as f:
                self.assertTrue(f.read(8).startswith(b"\x89PNG"))
        # Made again without --target, the report takes its reach figure away with it.
        self.assertTrue(os.path.exists(os.path.join(folder, "reach.png")))
        out = self.analyze("report", self.main, "--by", "overlap,sync_period", "--where", "lr<1", "--output", folder)
        self.assertIn("removed " + os.path.join(folder, "reach.png") + " (an earlier report's)", out)
        self.assertFalse(os.path.exists(os.path.join(folder, "reach.png")))
        self.assertTrue(os.path.exists(os.path.join(folder, "summary.png")))
        # A part its command alone would refuse (a key of one value) says why instead of a half-made table.
        self.analyze("report", self.main, "--by", "overlap,sync_period", "--factor", "overlap", "--where",
                     "sync_period=1", "--output", folder)
        with open(os.path.join(folder, "report.md"), encoding="utf-8") as f:
            self.assertIn("(no table: --factors 'sync_period' has one value (1) in the 12 runs read", f.read())
        # So does the comparison of a --factor of one value (the other parts are made).
        self.analyze("report", self.main, "--by", "overlap,sync_period", "--factor", "overlap", "--where",
                     "overlap=0", "--output", folder)
        with open(os.path.join(folder, "report.md"), encoding="utf-8") as f:
            text = f.read()
        self.assertRegex(text, r"## Comparisons of overlap\n(.|\n)*\(no table: --factor 'overlap' has one value \(0\) "
                               r"in the \d+ runs read")
        self.assertIn("## Factorial ANOVA", text)
        os.remove(os.path.join(folder, "report.md"))
        for args, message in ((["--factor", "ovrlap"], "--factor 'ovrlap' is not a column of the index"),
                              (["--factor", "overlap", "--baseline", "0.7"], "--baseline: '0.7' is not a level"),
                              (["--target", "84"], "--target: '84' must be in (0, 1]")):
            self.assertIn(message, self.analyze("report", self.main, "--by", "overlap", "--output", folder, *args,
                                                status=2))
            self.assertFalse(os.path.exists(os.path.join(folder, "report.md")), "refused before it is begun")
        # One that fails halfway (the metric is read by its tables) leaves the previous report whole.
        with open(os.path.join(folder, "report.md"), "w", encoding="utf-8") as f:
            f.write("the previous report\n")
        self.assertIn("metric 'accuracy' does not exist",
                      self.analyze("report", self.main, "--by", "overlap", "--metric", "accuracy", "--output", folder,
                                   status=2))
        with open(os.path.join(folder, "report.md"), encoding="utf-8") as f:
            self.assertEqual(f.read(), "the previous report\n")
        self.assertEqual(sorted(f for f in os.listdir(folder) if f.endswith(".partial")), [])

    def test_an_option_the_command_does_not_read_is_refused(self):
        # It was ignored: summary --output wrote no file, compare --alpha changed nothing.
        for args, message in (
                (["summary", "--by", "overlap", "--output", "s.png"],
                 "--output s.png: summary does not read it; it applies to report, plot"),
                (["summary", "--by", "overlap", "--factor", "lr"],
                 "--factor lr: summary does not read it; it applies to compare, power, report"),
                (["steps-to-result", "--target", "0.5", "--include_diverged"],
                 "--include_diverged: steps-to-result does not read it"),
                (["plot", "--kind", "curves", "--output", "c.png", "--log_x"],
                 "--log_x: plot --kind curves does not read it; it applies to report, plot --kind summary"),
                (["report", "--by", "overlap", "--output", "r", "--format", "csv"],
                 "--format csv: report does not read it"),
                (["curves", "--target", "0.5"], "--target 0.5: curves does not read it"),
                (["anova", "--factors", "overlap,lr", "--effect", "0.5"], "--effect 0.5: anova does not read it"),
                (["sumary", "--by", "overlap"], "unknown command 'sumary'; the commands: runs, summary,"),
                # A value of the wrong type says what the option takes.
                (["compare", "--factor", "lr", "--alpha", "5%"], "--alpha: '5%' must be a number, such as 0.05"),
                (["steps-to-result", "--target", "half"], "--target: 'half' must be a number")):
            self.assertIn(message, self.analyze(args[0], self.main, *args[1:], status=2))

    def test_studies_compare_by_name_and_folder(self):
        rows = list(csv.DictReader(io.StringIO(self.analyze("summary", self.main, self.batch, "--by", "study",
                                                            "--format", "csv"))))
        self.assertEqual([(r["study"], r["n"]) for r in rows], [("batch", "6"), ("main", "9")])
        # One study in two folders (results of two machines): told apart by study_dir.
        copy = os.path.join(self.tmp, "elsewhere", "periods")
        shutil.copytree(self.periods, copy)
        out = self.analyze("compare", self.periods, copy, "--factor", "study_dir", "--format", "csv")
        self.assertIn(copy, out)
        self.assertIn(self.periods, out)
        self.assertNotIn("more than one of the folders", out)
        # Read as one, each copy of a run counted as a sample of its own (n 4 for 2 runs) without a word.
        out = self.analyze("summary", self.periods, copy, "--by", "sync_period", "--format", "csv")
        self.assertIn(f"warning: 4 run(s) are in more than one of the folders read (one run id: the same config and "
                      f"seed), e.g. ", out)
        self.assertIn("understates the variance and the p-values. Compare the folders (--factor study_dir", out)
        # One folder given twice is refused: every run would count twice.
        out = self.analyze("summary", self.periods, self.periods + "/", status=2)
        self.assertIn(f"{self.periods}/: given twice (also as {self.periods}); each of its runs would count twice", out)

    def test_mean_of_the_last_evaluations(self):
        # Evaluations every 2 steps of 10: the last two are steps 8 and 10, and every group has 3 runs.
        def means(metric):
            return {r["sync_period"]: float(r["mean (fraction)"]) for r in csv.DictReader(io.StringIO(self.analyze(
                "summary", self.main, "--by", "sync_period", "--where", "lr=0.05", "--where", "overlap=0",
                "--metric", metric, "--format", "csv")))}
        last2, at8, at10 = means("test_accuracy@last=2"), means("test_accuracy@step=8"), means("test_accuracy@step=10")
        for period in ("1", "4"):
            self.assertAlmostEqual(last2[period], (at8[period] + at10[period]) / 2, places=4)
        self.assertEqual(means("test_accuracy@last=1"), at10)
        # Of the model every worker held: every evaluation of synchronous runs; with
        # sync_period 4 those at the averagings, steps 4 and 8 (eval/synced).
        at4, synced2 = means("test_accuracy@step=4"), means("test_accuracy@synced_last=2")
        self.assertAlmostEqual(synced2["1"], last2["1"], places=4)
        self.assertAlmostEqual(synced2["4"], (at4["4"] + at8["4"]) / 2, places=4)
        self.assertEqual(means("test_accuracy@synced_last=1")["4"], at8["4"])
        self.assertEqual(means("final_synced_test_accuracy"), {"1": at10["1"], "4": at8["4"]})
        for metric, message in (("test_accuracy@last=0", "'0' is not a count of evaluations >= 1"),
                                ("test_accuracy@last=x", "'x' is not a number of evaluations"),
                                ("test_accuracy@best=1", "expected SERIES@step=N, SERIES@epoch=E, SERIES@last=K, "
                                                         "SERIES@synced_last=K, SERIES@reach=T or "
                                                         "SERIES@reach_time=T")):
            self.assertIn(message, self.analyze("summary", self.main, "--metric", metric, status=2))

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

    def test_intervals_of_curves_and_plots(self):
        """--interval: the curves' ends are the summary's mean +/- sd, sem, ci95 or min and max at that point."""
        summary = {r["sync_period"]: r for r in csv.DictReader(io.StringIO(self.analyze(
            "summary", self.main, "--by", "sync_period", "--metric", "test_accuracy@step=10", "--where", "lr=0.05",
            "--format", "csv")))}
        headers = {"ci95": ("ci95 low", "ci95 high"), "sd": ("mean - sd", "mean + sd"),
                   "sem": ("mean - sem", "mean + sem"), "range": ("min", "max")}
        for interval, (low, high) in headers.items():
            rows = [r for r in csv.DictReader(io.StringIO(self.analyze(
                "curves", self.main, "--by", "sync_period", "--where", "lr=0.05", "--interval", interval,
                "--format", "csv"))) if r["step"] == "10"]
            self.assertEqual(len(rows), 2, interval)
            for row in rows:
                s = summary[row["sync_period"]]
                mean = float(s["mean (fraction)"])
                if interval in ("sd", "sem"):
                    spread = float(s[interval + " (fraction)"])
                    expect = (mean - spread, mean + spread)
                else:
                    names = {"ci95": ("ci95 low", "ci95 high"), "range": ("min", "max")}[interval]
                    expect = tuple(float(s[n + " (fraction)"]) for n in names)
                got = (float(row[low + " (fraction)"]), float(row[high + " (fraction)"]))
                for g, e in zip(got, expect):
                    self.assertAlmostEqual(g, e, places=3, msg=f"{interval} {row}")
        head = self.analyze("curves", self.main, "--interval", "none", "--format", "csv").splitlines()[0]
        self.assertEqual(head, "step,n,mean (fraction)")
        need_gnuplot(self)
        path = os.path.join(self.tmp, "band.svg")
        self.analyze("plot", self.main, "--kind", "summary", "--by", "overlap,sync_period", "--where", "lr=0.05",
                     "--interval", "sd", "--style", "band", "--output", path)
        with open(path, encoding="utf-8") as f:
            svg = f.read()
        self.assertIn("mean and +/- 1 standard deviation over seeds", svg)
        self.assertIn("lr=0.05", svg)
        # The x tics are the levels the study ran (gnuplot's own were 0, 0.1, ... for 0 and 0.5;
        # 1, 1.2, 1.4, ... for workers 1 and 2): the labels centred under the x axis.
        x_tics = re.findall(r'text-anchor="middle">\s*<text><tspan[^>]*> ([^<]+)</tspan>', svg)
        self.assertEqual(x_tics, ["0", "0.5"])
        # Lines by every key after x: one per combination (the thesis's households figure, a line per
        # household size and period).
        path = os.path.join(self.tmp, "three-keys.svg")
        self.analyze("plot", self.main, "--kind", "summary", "--by", "overlap,sync_period,lr", "--include_diverged",
                     "--output", path)
        with open(path, encoding="utf-8") as f:
            titles = re.findall(r"<title>([^<]*)</title>", f.read())
        self.assertEqual(titles[1:], ["sync_period=1 lr=0.05", "sync_period=1 lr=1000", "sync_period=4 lr=0.05",
                                      "sync_period=4 lr=1000"])
        for args, message in ((["curves", self.main, "--interval", "iqr"], "--interval: 'iqr' is not one of: ci95, sd"),
                              (["plot", self.main, "--by", "overlap", "--style", "area", "--output", path],
                               "--style: 'area' is not one of: bars, band")):
            self.assertIn(message, self.analyze(*args, status=2))

    def test_plot_bands_stay_within_what_the_metric_can_take(self):
        """A t interval over 2 seeds reaches far past an accuracy's 0 and 1: the plotted band is cut there, and
        says so; the table keeps the interval uncut."""
        study = os.path.join(self.tmp, "spread")
        shutil.copytree(self.batch, study)
        with h5py.File(os.path.join(study, "index.h5"), "r+") as f:
            seeds = f["index/seed"][()]
            f["index/final_test_accuracy"][...] = [0.02 if s == seeds.min() else 0.98 for s in seeds]
            del f["index/final_test_accuracy"].attrs["crc32"]  # edited values: else a damaged file
        rows = list(csv.DictReader(io.StringIO(
            self.analyze("summary", study, "--by", "batch_size", "--format", "csv"))))
        self.assertLess(float(rows[0]["ci95 low (fraction)"]), -1)
        self.assertGreater(float(rows[0]["ci95 high (fraction)"]), 2)
        need_gnuplot(self)
        path = os.path.join(self.tmp, "spread.svg")
        for style in ("bars", "band"):
            out = self.analyze("plot", study, "--kind", "summary", "--by", "batch_size", "--style", style,
                               "--output", path)
            self.assertIn("# the band's ends are cut at final_test_accuracy's range, 0 to 1", out)
            with open(path) as f:
                ticks = [float(t) for t in re.findall(r"<tspan[^>]*>\s*(-?[0-9.]+)</tspan>", f.read())]
            self.assertTrue(ticks)
            self.assertGreaterEqual(min(ticks), 0, f"{style}: an axis reaches below 0: {ticks}")
        # A report says it under the figure.
        report = os.path.join(self.tmp, "spread-report")
        os.makedirs(report)
        self.analyze("report", study, "--by", "batch_size", "--output", report)
        with open(os.path.join(report, "report.md")) as f:
            self.assertIn("](summary.png)\n\nIn this figure the band's ends are cut at final_test_accuracy's range, "
                          "0 to 1 (the tables give them uncut).", f.read())
        # A band within them (the runs' min to max) is drawn as it is, with no note.
        out = self.analyze("plot", self.batch, "--kind", "summary", "--by", "batch_size", "--interval", "range",
                           "--output", path)
        self.assertNotIn("cut at", out)

    def test_plot_names_are_never_parsed(self):
        """A quote in the output's or $TMPDIR's name reached gnuplot's script (and a shell) unquoted; a missing
        gnuplot or scratch folder is named as such."""
        r = subprocess.run([ANALYZE, "plot", self.batch, "--kind", "summary", "--by", "batch_size", "--output",
                            os.path.join(self.tmp, "env.svg")], capture_output=True, text=True, timeout=120,
                           env={**os.environ, "PATH": os.path.join(self.tmp, "no such folder")})
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("gnuplot was not found on the PATH: apt-get install gnuplot-nox", r.stderr)
        need_gnuplot(self)
        folder = os.path.join(self.tmp, "it's here")
        os.makedirs(folder)
        path = os.path.join(folder, "o'clock.svg")
        self.analyze("plot", self.batch, "--kind", "curves", "--by", "batch_size", "--output", path)
        with open(path) as f:
            self.assertIn("<svg", f.read())

        def plot(**env):
            return subprocess.run([ANALYZE, "plot", self.batch, "--kind", "summary", "--by", "batch_size", "--output",
                                   os.path.join(self.tmp, "env.svg")], capture_output=True, text=True, timeout=120,
                                  env={**os.environ, **env})
        r = plot(TMPDIR=folder)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(os.listdir(folder), ["o'clock.svg"])  # the scratch files are gone
        r = plot(TMPDIR=os.path.join(self.tmp, "no such folder"))
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("no such folder: cannot create a scratch folder for gnuplot here", r.stderr)

    def test_plots(self):
        need_gnuplot(self)
        for kind, args in (("summary", ["--by", "overlap,sync_period", "--where", "lr=0.05"]),
                           ("curves", ["--by", "sync_period", "--where", "lr=0.05", "--x", "epoch"]),
                           ("reach", ["--target", "0.5", "--by", "sync_period", "--where", "lr=0.05"]),
                           ("steps", ["--target", "0.5"]), ("best_lr", ["--target", "0.5"])):
            for ext in ("png", "svg"):
                path = os.path.join(self.tmp, f"{kind}.{ext}")
                study = self.batch if kind in ("steps", "best_lr") else self.main
                self.analyze("plot", study, "--kind", kind, "--output", path, *args)
                with open(path, "rb") as f:
                    content = f.read()
                self.assertTrue(content.startswith(b"\x89PNG") if ext == "png" else b"<?xml" in content[:8] or b"<svg" in content[:8])
                if ext == "svg" and "--where" in args:  # a figure of a slice says which slice
                    self.assertIn(b"lr=0.05", content)
        out = self.analyze("plot", self.main, "--kind", "summary", "--by", "overlap", "--output", "x.pdf", status=2)
        self.assertIn("must end in .png or .svg", out)
        # reach: a line per group named with how many of its runs reached the target, as the summary of
        # test_accuracy@reach=0.5 counts them.
        reached = {r["sync_period"]: r["n"] for r in csv.DictReader(io.StringIO(self.analyze(
            "summary", self.main, "--by", "sync_period", "--where", "lr=0.05", "--metric", "test_accuracy@reach=0.5",
            "--format", "csv")))}
        with open(os.path.join(self.tmp, "reach.svg")) as f:
            svg = f.read()
        for period, runs in (("1", 6), ("4", 3)):
            self.assertIn(f"sync_period={period} ({reached[period]} of {runs})", svg)
        self.assertNotIn("fill-opacity", svg)  # no band unless asked
        # --interval ci95: each line's pointwise 95 % interval (unit test KaplanMeier.BandAsR: R's numbers).
        banded = os.path.join(self.tmp, "reach-band.svg")
        self.analyze("plot", self.main, "--kind", "reach", "--target", "0.5", "--by", "sync_period", "--where",
                     "lr=0.05", "--interval", "ci95", "--output", banded)
        with open(banded) as f:
            svg = f.read()
        self.assertIn("95 % band", svg)
        self.assertGreaterEqual(svg.count("fill-opacity"), 2)
        for args, message in ((["--x", "epoch"], "--x: 'epoch' plot --kind reach draws against step or time_s"),
                              (["--interval", "sd"], "--interval: 'sd' plot --kind reach draws the Kaplan-Meier "
                                                     "estimate's pointwise 95 % interval"),
                              ([], "plot --kind reach needs --target VALUE")):
            target = [] if not args else ["--target", "0.5"]
            self.assertIn(message, self.analyze("plot", self.main, "--kind", "reach", *target, *args, "--output",
                                                os.path.join(self.tmp, "r.png"), status=2))
        # Short line names stand beside the graph, long ones (several keys) below it.
        for kind, by, where in (("curves", "overlap", "beside"), ("curves", "overlap,sync_period,lr", "below"),
                                ("summary", "sync_period,overlap", "beside")):
            path = os.path.join(self.tmp, f"key-{where}.svg")
            self.analyze("plot", self.main, "--kind", kind, "--by", by, "--output", path)
            with open(path) as f:
                svg = f.read()
            width, height = (float(v) for v in re.search(r'width="([0-9.]+)" height="([0-9.]+)"', svg).groups())
            keys = [(float(x), float(y)) for x, y, text in re.findall(
                r"translate\(([0-9.]+),([0-9.]+)\)[^>]*>\s*<text>([^<]*)</text>", svg) if text.startswith("overlap=")]
            self.assertTrue(keys, f"{by}: no key entry found in {path}")
            for x, y in keys:
                if where == "below":
                    self.assertGreater(y, 0.8 * height, f"{by}: key entry at ({x}, {y}) of {width} x {height}")
                else:
                    self.assertGreater(x, 0.6 * width, f"{by}: key entry at ({x}, {y}) of {width} x {height}")
                    self.assertLess(y, 0.5 * height, f"{by}: key entry at ({x}, {y}) of {width} x {height}")
        # A key inert in every run of a line is left out of its name (local_sgd_from_epoch where
        # sync_period = 1); momentum under plain SGD makes one shared run of both values.
        def names(svg_path):
            with open(svg_path) as f:
                return re.findall(r"<text>([^<]*=[^<]*)</text>", f.read())
        path = os.path.join(self.tmp, "inert.svg")
        self.analyze("plot", self.periods, "--kind", "curves", "--by", "sync_period,local_sgd_from_epoch",
                     "--output", path)
        self.assertEqual(names(path), ["sync_period=1", "sync_period=never local_sgd_from_epoch=0"])
        subprocess.run([EXE, "--data_dir", self.data, "--dataset", "mnist", "--epochs", "1", "--output", self.tmp,
                        "--quiet", "--name", "alike", "--batch_size", "10", "--optimizer", "sgd",
                        "--momentum", "0.5,0.9"], check=True, capture_output=True)
        self.analyze("plot", os.path.join(self.tmp, "alike"), "--kind", "curves", "--by", "momentum,seed",
                     "--output", path)
        self.assertEqual(names(path), ["seed=1"])
        # A logarithmic x axis for keys swept over decades; a value of 0 cannot go on one.
        log_plot = os.path.join(self.tmp, "log.svg")
        self.analyze("plot", self.batch, "--kind", "summary", "--by", "batch_size", "--log_x", "--output", log_plot)
        with open(log_plot) as f:
            points = re.findall(r"#gpPt6' transform='translate\(([0-9.]+),", f.read())
        # The batch sizes 5, 10, 20, then the legend's mark (gnuplot 6 draws each error line's mark twice).
        x5, x10, x20 = sorted({float(x) for x in points})[:3]
        self.assertAlmostEqual(x10 - x5, x20 - x10, delta=0.1)  # equal steps for equal ratios
        # Lines at one level are moved aside (dodged), so that their error bars do not hide each other:
        # at sync_period 1 both overlap lines, a small step apart; at 4 only overlap 0 (excluded there).
        for extra in ([], ["--log_x"]):
            self.analyze("plot", self.main, "--kind", "summary", "--by", "sync_period,overlap", "--where", "lr=0.05",
                         "--output", log_plot, *extra)
            with open(log_plot) as f:
                points = sorted({round(float(x), 1) for x in re.findall(r"#gpPt6' transform='translate\(([0-9.]+),",
                                                                         f.read())})
            self.assertEqual(len(points), 4, f"{extra}: 3 points and the key's marks: {points}")
            left, right, lone = points[:3]
            self.assertLess(left, right, extra)
            self.assertLess(right - left, 0.1 * (lone - left), f"{extra}: a small step: {points}")
            # One level alone (a --where on the x key): dodged too.
            self.analyze("plot", self.main, "--kind", "summary", "--by", "sync_period,overlap", "--where", "lr=0.05",
                         "--where", "sync_period=1", "--output", log_plot, *extra)
            with open(log_plot) as f:
                points = sorted({round(float(x), 1) for x in re.findall(r"#gpPt6' transform='translate\(([0-9.]+),",
                                                                         f.read())})
            self.assertEqual(len(points), 3, f"{extra}: 2 points and the key's marks: {points}")
        out = self.analyze("plot", self.main, "--kind", "summary", "--by", "overlap", "--log_x", "--output", log_plot,
                           status=2)
        self.assertIn("overlap = 0 cannot be placed on a logarithmic axis", out)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
