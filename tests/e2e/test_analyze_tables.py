#!/usr/bin/env python3
"""dpstudy-analyze on the fixture studies of analyze_fixture.py: the tables: every format, keys and units, the
runs listed, pooled groups, several studies.

usage: test_analyze_tables.py ANALYZE WORKLOAD_EXE DPSTUDY_DATA [SIMPLE_CNN_EXE]
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

import h5py

from analyze_fixture import AnalyzeTest, ANALYZE, DATA_TOOL, EXE, SIMPLE_CNN
from e2e_support import need_gnuplot


class AnalyzeTables(AnalyzeTest):
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
        self.assertIn("no completed run (9 diverged, beaten or failed)", " ".join(tables[0]["notes"]))
        md = self.analyze("summary", self.main, "--by", "lr", "--format", "markdown")
        self.assertIn("| lr | n | not completed |", md)
        with_div = self.analyze("summary", self.main, "--by", "lr", "--include_diverged", "--format", "csv")
        self.assertIn("1000,9,9", with_div)

    def test_compare_and_anova_count_diverged_runs_when_asked(self):
        """--include_diverged reaches the tests within each family: the lr 1000 runs, all diverged, are a level."""
        def pairwise(*more):
            tables = json.loads(self.analyze("compare", self.main, "--factor", "lr", *more, "--format", "json"))
            return tables[1]["rows"], " ".join(tables[1]["notes"])

        rows, notes = pairwise()
        self.assertEqual(rows, [])
        self.assertIn("level lr=1000 has no completed run here", notes)
        rows, notes = pairwise("--include_diverged")
        self.assertEqual([(r["lr a"], r["lr b"], r["n a"], r["n b"]) for r in rows], [(0.05, 1000, 9, 9)])
        anova = json.loads(self.analyze("anova", self.main, "--factors", "lr,overlap", "--include_diverged",
                                        "--format", "json"))[0]
        self.assertEqual({r["term"]: r["df"] for r in anova["rows"]},
                         {"lr": 1, "overlap": 1, "lr x overlap": 1, "residual": 14})

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
        self.assertIn("warning: 4 run(s) are in more than one of the folders read (one run id: the same config and "
                      "seed), e.g. ", out)
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


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
