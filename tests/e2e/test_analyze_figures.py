#!/usr/bin/env python3
"""dpstudy-analyze on the fixture studies of analyze_fixture.py: the figures and the report: every plot kind,
bands and intervals, names, and the report's parts and commands.

usage: test_analyze_figures.py ANALYZE WORKLOAD_EXE DPSTUDY_DATA [SIMPLE_CNN_EXE]
"""
import csv
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import unittest

import h5py

from analyze_fixture import AnalyzeTest, ANALYZE, EXE
from e2e_support import need_gnuplot


class AnalyzeFigures(AnalyzeTest):
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

    def test_a_report_against_the_batch_draws_the_steps_to_its_target(self):
        """With --target and a first --by key of the batch, the report holds the steps figure of plot --kind
        steps, under its command; made again without --target, it takes the figure away."""
        need_gnuplot(self)
        folder = os.path.join(self.tmp, "report-steps")
        self.analyze("report", self.batch, "--by", "batch_size,seed", "--target", "0.5", "--output", folder)
        with open(os.path.join(folder, "report.md"), encoding="utf-8") as f:
            text = f.read()
        self.assertIn(f"dpstudy-analyze plot --kind steps {self.batch} --target 0.5 --by batch_size,seed "
                      "--output steps.png\n", text)
        self.assertIn("![steps by batch_size, seed](steps.png)", text)
        with open(os.path.join(folder, "steps.png"), "rb") as f:
            self.assertTrue(f.read(8).startswith(b"\x89PNG"))
        out = self.analyze("report", self.batch, "--by", "batch_size,seed", "--output", folder)
        self.assertIn("removed " + os.path.join(folder, "steps.png") + " (an earlier report's)", out)
        # Against another key, no steps figure: perfect scaling means nothing there.
        self.analyze("report", self.batch, "--by", "seed", "--target", "0.5", "--output", folder)
        self.assertFalse(os.path.exists(os.path.join(folder, "steps.png")))

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

    def test_a_gnuplot_script_draws_the_figure_elsewhere(self):
        """--output F.gp: the script with its data inline, written where gnuplot is not (a GPU machine); run
        elsewhere, from another folder, it draws beside itself the SVG that --output F.svg draws."""
        args = ["plot", self.batch, "--kind", "steps", "--target", "0.5", "--by", "batch_size"]
        here = os.path.join(self.tmp, "script-made")
        os.makedirs(here)
        r = subprocess.run([ANALYZE, *args, "--output", os.path.join(here, "steps.gp")], capture_output=True,
                           text=True, timeout=120, env={**os.environ, "PATH": os.path.join(self.tmp, "no gnuplot")})
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(here, "steps.gp")) as f:
            script = f.read()
        self.assertIn("$data << EOD\n", script)
        self.assertIn("datafile = '$data'\n", script)
        self.assertNotIn(self.tmp, script)  # nothing of this machine's folders: it runs anywhere
        os.makedirs(os.path.join(here, "folder.gp"))
        self.assertIn(f"--output: '{here}/folder.gp' cannot be written: Is a directory",
                      self.analyze(*args, "--output", os.path.join(here, "folder.gp"), status=2))
        need_gnuplot(self)
        elsewhere = os.path.join(self.tmp, "script-moved")
        os.makedirs(elsewhere)
        shutil.move(os.path.join(here, "steps.gp"), elsewhere)
        r = subprocess.run(["gnuplot", os.path.join("script-moved", "steps.gp")], capture_output=True, text=True,
                           timeout=120, cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.analyze(*args, "--output", os.path.join(here, "steps.svg"))
        with open(os.path.join(elsewhere, "steps.svg"), "rb") as drawn, \
                open(os.path.join(here, "steps.svg"), "rb") as direct:
            self.assertEqual(drawn.read(), direct.read())
        # gnuplot's own failure is the error, with what gnuplot said.
        os.makedirs(os.path.join(here, "folder.svg"))
        out = self.analyze(*args, "--output", os.path.join(here, "folder.svg"), status=2)
        self.assertIn(f"error: gnuplot failed writing {here}/folder.svg: ", out)
        self.assertIn("cannot open file", out)

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
        self.assertIn("must end in .png, .svg or .gp", out)
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
