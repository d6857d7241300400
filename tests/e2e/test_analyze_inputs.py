#!/usr/bin/env python3
"""dpstudy-analyze on the fixture studies of analyze_fixture.py: what it is given: edge cases, damaged and
unindexed files, folders that are not a study, and runs that differ in data, build, device or sharing.

usage: test_analyze_inputs.py ANALYZE WORKLOAD_EXE DPSTUDY_DATA [SIMPLE_CNN_EXE]
"""
import csv
import glob
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import unittest

import h5py

from analyze_fixture import AnalyzeTest, ANALYZE, DATA_TOOL, EXE
from e2e_support import make_fixtures


class AnalyzeInputs(AnalyzeTest):
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
                 "--kind: 'bars' is not one of: summary, curves, reach, steps, best_lr, scaling"),
                # A .gp script names its output on a line of its own.
                (["plot", "--kind", "summary", "--by", "overlap", "--output", os.path.join(self.tmp, "a\nb.gp")],
                 "has a line break in its name, which a gnuplot script cannot hold")):
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


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
