#!/usr/bin/env python3
"""search_stop = beaten: a search trial ends where another trial of its combination has reached
the goal in as few steps. The best trial of each combination, and so steps-to-result, is as
without it; a beaten trial's series are the first steps of the whole run's; a study without the
key trains beaten trials again; a beaten trial reproduces; compare pairs a search's runs by trial.

usage: test_beaten_trials.py WORKLOAD_EXE DPSTUDY_DATA DPSTUDY_ANALYZE [TEST...] (results_fixture.py)
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import unittest

import h5py
import numpy as np
from scipy import stats

from e2e_support import MPI_ENV, mpi_launch
from results_fixture import ANALYZE, EXE, Results

MPIEXEC = os.environ.get("DPSTUDY_TEST_MPIEXEC", "")  # set by CTest where dpstudy has MPI

# Sobol rates from 1e-3 to 1 at two batch sizes, six unless a test asks for more: the slow rates
# miss 50 % test accuracy for many steps, the fast ones reach it in a few.
SEARCH = ["--batch_size", "10,20", "--epochs", "3", "--search", "sobol", "--search_lr", "1e-3:1",
          "--eval_growth", "0.05", "--goal_error", "0.5", "--stop_at_goal", "true"]


def runs_of(folder):
    """run id -> (batch_size, trial, status, steps, steps_to_goal) of every run file."""
    out = {}
    for path in glob.glob(os.path.join(folder, "runs", "*.h5")):
        with h5py.File(path, "r") as f:
            s = f["summary"].attrs
            out[os.path.basename(path)[:-3]] = (int(f["config"].attrs["batch_size"]), int(f["config"].attrs["trial"]),
                                                s["status"], int(s["steps"]), int(s["steps_to_goal"]))
    return out


def best_of(runs):
    """batch_size -> (fewest steps to the goal, its trial) over the completed trials."""
    best = {}
    for batch, trial, status, _, to_goal in runs.values():
        if status == "completed" and to_goal >= 0 and (batch not in best or (to_goal, trial) < best[batch]):
            best[batch] = (to_goal, trial)
    return best


def search(data, output, *more, trials=6):
    return subprocess.run([EXE, "--data_dir", data, "--dataset", "mnist", "--output", output, "--threads", "1",
                           "--name", "s", *SEARCH, "--trials", str(trials), *more], capture_output=True, text=True,
                          timeout=300)


class BeatenTrials(Results):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.full = os.path.join(cls.tmp, "full")
        r = search(cls.data, cls.full)
        assert r.returncode == 0, r.stdout + r.stderr
        cls.full_runs = runs_of(os.path.join(cls.full, "s"))

    def search(self, name, *more, trials=6):
        r = search(self.data, os.path.join(self.tmp, name), *more, trials=trials)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return r.stdout, os.path.join(self.tmp, name, "s")

    def check_beaten(self, folder):
        runs = runs_of(folder)
        self.assertEqual(set(runs), set(self.full_runs))
        best = best_of(self.full_runs)
        self.assertEqual(best_of(runs), best)
        beaten = [i for i, r in runs.items() if r[2] == "beaten"]
        self.assertTrue(beaten, "no trial was beaten: the test checks nothing")
        for i in beaten:
            batch, _, _, steps, to_goal = runs[i]
            self.assertEqual(to_goal, -1)
            self.assertGreaterEqual(steps, best[batch][0])  # ended at or after the best trial's goal
            self.assertLess(steps, self.full_runs[i][3])
            # The first steps of the whole run, bit for bit: the rule reads, it changes nothing.
            with h5py.File(os.path.join(folder, "runs", i + ".h5"), "r") as part, \
                    h5py.File(os.path.join(self.full, "s", "runs", i + ".h5"), "r") as whole:
                for series in ("train/step", "train/loss", "train/lr", "eval/step", "eval/test_accuracy",
                               "eval/test_loss"):
                    a, b = part[series][()], whole[series][()]
                    self.assertTrue(np.array_equal(a, b[:len(a)]), f"{i} {series}")
                self.assertEqual(part["eval/step"][-1], steps)  # it ends at an evaluation
        self.assertLess(sum(r[3] for r in runs.values()), sum(r[3] for r in self.full_runs.values()))
        return runs

    def test_beaten_trials_leave_each_combinations_best_trial_as_it_was(self):
        out, folder = self.search("beaten", "--search_stop", "beaten")
        runs = self.check_beaten(folder)
        n = sum(r[2] == "beaten" for r in runs.values())
        self.assertEqual(out.count(": beaten, final test accuracy"), n, out)
        self.assertRegex(out, r": beaten, final test accuracy [0-9.]+ %, [0-9.]+ s; trial=[0-5] reached the goal at "
                              r"step [0-9]+")
        # steps-to-result: the same best, trial and rate; the beaten trials are named in a note.
        tables = []
        for f in (os.path.join(self.full, "s"), folder):
            text = subprocess.run([ANALYZE, "steps-to-result", f, "--target", "0.5", "--by", "batch_size",
                                   "--format", "json"], capture_output=True, text=True, check=True).stdout
            tables.append(json.loads(text)[0])
        for whole, part in zip(tables[0]["rows"], tables[1]["rows"]):
            for column in ("batch_size", "trials", "best (steps)", "best trial lr"):
                self.assertEqual(whole[column], part[column], column)
        self.assertIn(f"{n} trial(s) ended beaten (search_stop = beaten)", " ".join(tables[1]["notes"]))

    def test_runs_at_once_share_what_each_has_reached(self):
        # Two lanes of one process: a trial may be beaten by one that finished beside it.
        _, folder = self.search("lanes", "--search_stop", "beaten", "--runs_at_once", "2")
        self.check_beaten(folder)

    @unittest.skipUnless(MPIEXEC, "built without MPI")
    def test_processes_learn_of_each_others_trials_from_their_files(self):
        # Two processes, each training runs of its own: one learns what the other's trials reached
        # from their run files as it starts a run.
        output = os.path.join(self.tmp, "mpi")
        r = subprocess.run(mpi_launch(MPIEXEC, 2) + [EXE, "--data_dir", self.data, "--dataset", "mnist", "--output",
                                                     output, "--threads", "1", "--name", "s", *SEARCH,
                                                     "--trials", "6", "--search_stop", "beaten"],
                           capture_output=True, text=True, timeout=300, env=MPI_ENV)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.check_beaten(os.path.join(output, "s"))

    def test_a_study_without_search_stop_trains_beaten_trials_again(self):
        _, folder = self.search("again", "--search_stop", "beaten")
        beaten = sum(r[2] == "beaten" for r in runs_of(folder).values())
        out, _ = self.search("again")
        self.assertIn(f"# {beaten} run(s) ended beaten under search_stop = beaten, which this study no longer sets: "
                      "they train again from their start", out)
        self.assertEqual(out.count(": starting"), beaten, out)
        self.assertEqual(runs_of(folder), self.full_runs)
        # With the key again, nothing is left to do.
        out, _ = self.search("again", "--search_stop", "beaten")
        self.assertEqual(out.count(": starting"), 0, out)

    def test_a_beaten_trial_reproduces(self):
        _, folder = self.search("reproduce", "--search_stop", "beaten")
        run = next(i for i, r in runs_of(folder).items() if r[2] == "beaten")
        r = subprocess.run([EXE, "--reproduce", os.path.join(folder, "runs", run + ".h5"), "--data_dir", self.data,
                            "--output", os.path.join(self.tmp, "reproduce")],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("# reproduce: identical", r.stdout)

    def test_a_trial_beaten_where_the_test_split_was_not_due_says_where_it_ended(self):
        # The goal on a validation split, the test split only at the end (test_every): a beaten
        # trial ends with no test accuracy, and its line says at which step it ended instead.
        out, folder = self.search("no-test", "--search_stop", "beaten", "--validation_fraction", "0.2",
                                  "--test_every", "100000")
        runs = runs_of(folder)
        beaten = [r for r in runs.values() if r[2] == "beaten"]
        self.assertTrue(beaten, "no trial was beaten: the test checks nothing")
        for _, trial, _, steps, _ in beaten:
            self.assertRegex(out, rf"trial={trial}: beaten at step {steps}, no test accuracy there, [0-9.]+ s; "
                                  r"trial=[0-9] reached the goal at step [0-9]+")
        self.assertNotIn("nan %", out)

    def test_times_to_the_goal_count_a_beaten_trial_as_censored(self):
        # A beaten trial ends where another trial had already reached the goal, whatever its own course:
        # the Kaplan-Meier estimates count it as censored there. Up to the first step at the goal
        # every trial is at risk, as in the whole search, so the fraction at the goal there is the
        # whole search's (leaving the beaten trials out would make it larger).
        _, folder = self.search("censored", "--search_stop", "beaten")

        def reach(f):
            gp = os.path.join(self.tmp, "reach.gp")
            subprocess.run([ANALYZE, "plot", f, "--kind", "reach", "--series", "test_accuracy", "--target", "0.5",
                            "--by", "batch_size", "--output", gp], check=True, capture_output=True)
            with open(gp) as script:
                text = script.read()
            blocks = text.split("$data << EOD\n")[1].split("\nEOD")[0].strip().split("\n\n\n")
            firsts = [b.split("\n")[1] for b in blocks]  # after "0 0": the first step at the goal
            return firsts, re.findall(r"title 'batch_size=(\d+) \((\d+) of (\d+)\)'", text)

        runs = runs_of(folder)
        whole, part = reach(os.path.join(self.full, "s")), reach(folder)
        self.assertEqual(part[0], whole[0])
        reached = {b: sum(r[0] == b and r[4] >= 0 for r in runs.values()) for b in (10, 20)}
        self.assertEqual(part[1], [(str(b), str(reached[b]), "6") for b in (10, 20)])
        self.assertTrue(all(n < 6 for n in reached.values()), "every trial reached the goal: the test checks nothing")
        notes = " ".join(json.loads(subprocess.run(
            [ANALYZE, "summary", folder, "--metric", "steps_to_goal", "--by", "batch_size", "--format", "json"],
            capture_output=True, text=True, check=True).stdout)[0]["notes"])
        for b in (10, 20):
            beaten = sum(r[0] == b and r[2] == "beaten" for r in runs.values())
            self.assertIn(f"batch_size={b}: {6 - reached[b]} of its 6 run(s) never reached the goal, {beaten} of them "
                          "beaten (search_stop)", notes)

    def test_compare_pairs_the_runs_of_one_search_trial(self):
        # Trial k is one point of the search's rates at every batch size, so the paired tests match
        # runs by seed and trial: with one seed, by seed alone no run would pair.
        def compare(*folders):
            return json.loads(subprocess.run(
                [ANALYZE, "compare", *folders, "--factor", "batch_size", "--metric", "final_test_accuracy",
                 "--format", "json"], capture_output=True, text=True, check=True).stdout)[1]

        accuracy = {}
        for path in glob.glob(os.path.join(self.full, "s", "runs", "*.h5")):
            with h5py.File(path, "r") as f:
                accuracy[int(f["config"].attrs["batch_size"]), int(f["config"].attrs["trial"])] = float(
                    f["summary"].attrs["final_test_accuracy"])
        a, b = ([accuracy[batch, t] for t in range(6)] for batch in (10, 20))
        self.assertNotEqual(a, b, "the batch sizes reached the same accuracies: the pairing shows nothing")
        table = compare(os.path.join(self.full, "s"))
        row = table["rows"][0]
        self.assertEqual(row["pairs"], 6)
        self.assertAlmostEqual(row["paired t p Holm"], stats.ttest_rel(b, a).pvalue, places=4)
        self.assertIn("paired tests match runs by seed and search trial: one seed is one set of initial weights and "
                      "sampler streams, one trial one point of the search's metaparameters", table["notes"])
        # Trial k of another folder may be another search's point: a trial pairs within its folder.
        copy = os.path.join(self.tmp, "copy")
        shutil.copytree(os.path.join(self.full, "s"), copy)
        self.assertEqual(compare(os.path.join(self.full, "s"), copy)["rows"][0]["pairs"], 12)
        # A second search under the study's name, over other rates: its trial k is another point.
        two = os.path.join(self.tmp, "two-searches")
        for batch, rates in (("10", "1e-3:1e-2"), ("20", "1e-2:1")):
            subprocess.run([EXE, "--data_dir", self.data, "--dataset", "mnist", "--output", two, "--threads", "1",
                            "--name", "s", "--batch_size", batch, "--epochs", "1", "--search", "sobol",
                            "--search_lr", rates, "--trials", "3"], check=True, capture_output=True, timeout=300)
        table = compare(os.path.join(two, "s"))
        self.assertEqual(table["rows"][0]["pairs"], 0)
        self.assertIn("all, 10 vs 20: 3 trial(s) not paired: the two levels' runs of one seed and trial differ in "
                      "their metaparameters (a second search under the study's name?)", table["notes"])
        # Pooled over momentum, each seed and trial has two runs in a level, and a note says so.
        _, pooled = self.search("pooled", "--momentum", "0,0.5", trials=4)
        table = compare(pooled)
        self.assertEqual(table["rows"][0]["pairs"], 0)
        self.assertIn("all, 10 vs 20: no paired tests: seed 1 trial 0, seed 1 trial 1, seed 1 trial 2 and 1 more "
                      "have several runs in a level (other keys pooled); a --within or --where on those keys leaves "
                      "one run per seed and trial", table["notes"])
        self.assertEqual(json.loads(subprocess.run(
            [ANALYZE, "compare", pooled, "--factor", "batch_size", "--within", "momentum", "--format", "json"],
            capture_output=True, text=True, check=True).stdout)[1]["rows"][0]["pairs"], 4)

    def test_the_dry_run_counts_a_trial_to_its_searchs_best(self):
        # Two more trials of a complete search: each ends by the step where its batch size's best
        # trial reached the goal, so the dry run counts it to there; the job then stays within it.
        output = os.path.join(self.tmp, "more")
        shutil.copytree(self.full, output)
        folder = os.path.join(output, "s")
        dry = search(self.data, output, "--search_stop", "beaten", "--dry_run", trials=8)
        self.assertEqual(dry.returncode, 0, dry.stdout + dry.stderr)
        costs = {m[0]: int(m[1]) for m in re.findall(r"^ +\d+ +([0-9a-f]{16}) +to run +(\d+) ", dry.stdout, re.M)}
        self.assertEqual(len(costs), 4, dry.stdout)
        self.assertIn("the costs count it for the 4 run(s) to do whose combination has a complete trial at the goal",
                      dry.stdout)
        best = best_of(self.full_runs)
        self.search("more", "--search_stop", "beaten", trials=8)
        runs = runs_of(folder)
        for run, cost in costs.items():
            batch, trial, _, steps, _ = runs[run]
            self.assertIn(trial, (6, 7))
            self.assertEqual(cost, best[batch][0] * batch)
            self.assertLessEqual(steps * batch, cost)
        self.assertEqual(best_of(runs), best)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], *sys.argv[4:]], verbosity=2)
