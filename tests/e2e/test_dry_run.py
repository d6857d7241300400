#!/usr/bin/env python3
"""A study's --dry_run: the runs, their costs and threads, what another job is
doing, and the plan where the dataset is not here; and a global batch held
while workers are swept.

usage: test_dry_run.py WORKLOAD_EXE DPSTUDY_DATA DPSTUDY_ANALYZE [TEST...] (results_fixture.py)
"""
import os
import re
import subprocess
import sys
import unittest

import h5py

from results_fixture import ANALYZE, EXE, Results


class DryRun(Results):
    def test_dry_run_lists_runs_and_cost_and_runs_nothing(self):
        out = os.path.join(self.tmp, "dry")
        r = self.run_study("--workers", "1,2,4", "--sync_period", "1,8", "--exclude", "workers=1 & sync_period=8",
                           "--dry_run", output=out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("5 runs (1 excluded, 0 already complete), swept: workers, sync_period", r.stdout)
        self.assertIn("estimated cost:", r.stdout)
        self.assertEqual(len(re.findall(r"^ +\d+ +[0-9a-f]{16} +to run ", r.stdout, re.M)), 5, r.stdout)
        self.assertIn("# runs: 5 to run\n", r.stdout)
        self.assertNotIn("# order:", r.stdout)  # one round: no seeds, no search
        self.assertFalse(os.path.exists(out))

    def test_the_schedule_takes_a_seed_and_a_trial_at_a_time(self):
        # Each seed and search trial is a round: every cell's run of it goes out
        # before the next, the largest first, so a study stopped early holds whole
        # replicates. The runs of 10 steps cost twice those of 5.
        r = self.run_study("--max_steps", "5,10", "--seeds", "2", "--search", "sobol", "--trials", "2",
                           "--search_lr", "0.01:0.5", "--dry_run", output=os.path.join(self.tmp, "rounds"))
        self.assertEqual(r.returncode, 0, r.stderr)
        axes = dict(re.findall(r"^ +\d+ +([0-9a-f]{16}) +to run .*  (max_steps=.*)$", r.stdout, re.M))
        self.assertEqual(len(axes), 8, r.stdout)
        self.assertIn("# order: 4 rounds, one per seed and search trial; a round's runs start before the next "
                      "round's, largest estimated cost first", r.stdout)
        order = re.findall(r"^ +\d+ +([0-9a-f]{16}) +0 +\d+ +\d+$", r.stdout[r.stdout.index("# schedule:"):], re.M)
        rounds = [(re.search(r"seed=(\d+)", axes[i]).group(1), re.search(r"trial=(\d+)", axes[i]).group(1),
                   re.search(r"max_steps=(\d+)", axes[i]).group(1)) for i in order]
        self.assertEqual(rounds, [("1", "0", "10"), ("1", "0", "5"), ("1", "1", "10"), ("1", "1", "5"),
                                  ("2", "0", "10"), ("2", "0", "5"), ("2", "1", "10"), ("2", "1", "5")], r.stdout)

    def test_a_global_batch_held_while_workers_are_swept(self):
        # global_batch sets each run's batch_size = global_batch / workers; the runs are those
        # of the batch sizes given by hand (same ids), and analyze groups them by global_batch.
        out = os.path.join(self.tmp, "global")
        base = [EXE, "--data_dir", self.data, "--dataset", "mnist", "--epochs", "1", "--threads", "1", "--output", out]

        def study(*args, status=0):
            r = subprocess.run(base + list(args), capture_output=True, text=True, timeout=300)
            self.assertEqual(r.returncode, status, r.stdout + r.stderr)
            return r

        r = study("--name", "g", "--workers", "1,2,4", "--global_batch", "40,80", "--exclude",
                  "global_batch=80 & batch_size<=40", "--dry_run")
        self.assertIn("4 runs (2 excluded, 0 already complete), swept: workers, global_batch, batch_size", r.stdout)
        listed = re.findall(r"^ +\d+ +([0-9a-f]{16}) +to run .*  (workers=\S+ global_batch=\S+ batch_size=\S+)$",
                            r.stdout, re.M)
        self.assertEqual([axes for _, axes in listed],
                         ["workers=1 global_batch=40 batch_size=40", "workers=1 global_batch=80 batch_size=80",
                          "workers=2 global_batch=40 batch_size=20", "workers=4 global_batch=40 batch_size=10"])
        study("--name", "g", "--workers", "1,2,4", "--global_batch", "40", "--quiet")
        by_hand = study("--name", "h", "--workers", "2", "--batch_size", "20", "--dry_run").stdout
        self.assertIn(listed[2][0], by_hand)  # the same run id as batch_size 20 given by hand
        with h5py.File(os.path.join(out, "g", "index.h5"), "r") as f:
            self.assertEqual(sorted(zip(f["index"]["workers"][()], f["index"]["batch_size"][()])),
                             [(1, 40), (2, 20), (4, 10)])
            self.assertNotIn("global_batch", f["index"])  # a study key, not a run key
        r = subprocess.run([ANALYZE, "summary", os.path.join(out, "g"), "--by", "global_batch"], capture_output=True,
                           text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"\n +40 3 ")
        r = study("--name", "g", "--workers", "1,2", "--global_batch", "40", "--exclude", "batch_size=7", "--dry_run")
        self.assertIn("the exclude rule 'batch_size=7' drops no combination: batch_size is global_batch / workers "
                      "here (it takes 20, 40)", r.stdout)
        # Bad input: a batch that is not whole, a value that is no count, both keys given.
        r = study("--name", "g", "--workers", "3,4", "--global_batch", "40", "--dry_run", status=2)
        self.assertIn("1 combination(s) are invalid (drop them with --exclude):\n"
                      "  workers=3: --global_batch: '40' is not a multiple of workers (3)", r.stderr)
        r = study("--name", "g", "--workers", "3", "--global_batch", "40", "--dry_run", status=2)
        self.assertIn("--global_batch: '40' is not a multiple of workers (3)", r.stderr)
        r = study("--name", "g", "--workers", "2", "--global_batch", "1e2", "--dry_run", status=2)
        self.assertIn("--global_batch: '1e2' must be a whole number of samples >= 1", r.stderr)
        r = study("--name", "g", "--global_batch", "40", "--batch_size", "20", "--dry_run", status=2)
        self.assertIn("--global_batch: '40' cannot be combined with batch_size", r.stderr)

    def test_dry_run_says_how_each_run_uses_the_threads(self):
        cmd = [EXE, "--data_dir", self.data, "--dataset", "mnist", "--batch_size", "10", "--epochs", "1",
               "--output", os.path.join(self.tmp, "dry-threads"), "--threads", "2", "--workers", "1,2,4", "--dry_run",
               "--device", "cpu"]  # on a GPU, auto spreads each operation
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        # One worker on two threads spreads its operations; two and four step side by side.
        self.assertIn("# threads: 2 per process, --parallel auto: 2 run(s) with their workers side by side", r.stdout)
        self.assertIn(", 1 spreading each operation over the threads", r.stdout)
        # Planned for another job (a login node's dry run), the default threads are this process's guess.
        r = subprocess.run(cmd + ["--dry_run_processes", "1"], capture_output=True, text=True, timeout=300)
        self.assertIn("# threads: 2 per process, --parallel auto", r.stdout)
        without = cmd[:cmd.index("--threads")] + cmd[cmd.index("--threads") + 2:]
        r = subprocess.run(without + ["--dry_run_processes", "1"], capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"# threads: \d+ per process \(as this process would set them: give --threads as "
                                   r"that job will\), --parallel auto")

    def test_dry_run_shows_what_another_job_is_doing(self):
        out = os.path.join(self.tmp, "dry-states")
        args = ["--workers", "1,2,4", "--checkpoint_steps", "2"]
        r = self.run_study(*args, "--dry_run", output=out)
        cost = dict(re.findall(r"^ +\d+ +([0-9a-f]{16}) +to run +(\d+) ", r.stdout, re.M))
        self.assertEqual(len(cost), 3, r.stdout)
        # Killed at its 5th step, the first run trained has a checkpoint at step 4.
        r = self.run_study(*args, output=out, env=dict(os.environ, DPSTUDY_TEST_KILL_AT="step:5"))
        self.assertEqual(r.returncode, -9, r.stderr)
        [killed] = re.findall(r"\] ([0-9a-f]{16}) .*: starting", r.stdout)
        other = [i for i in cost if i != killed]
        runs = os.path.join(out, "mlp-mnist", "runs")
        open(os.path.join(runs, other[0] + ".claim"), "w").close()  # a group of a running MPI job took it
        open(os.path.join(runs, other[1] + ".ckpt.h5"), "w").close()  # unreadable: the run starts over
        r = self.run_study(*args, "--dry_run", output=out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, other[0] + r" +running ")
        self.assertRegex(r.stdout, other[1] + r" +to run +" + cost[other[1]] + " ")
        # What the killed run has left: its steps after the 4th, W b samples each.
        m = re.search(killed + r" +resumable +(\d+) +workers=(\d+)", r.stdout)
        self.assertTrue(m, r.stdout)
        self.assertEqual(int(m.group(1)), int(cost[killed]) - 4 * int(m.group(2)) * 10)
        self.assertIn("# runs: 1 running, 1 resumable, 1 to run\n", r.stdout)

    def test_dry_run_plans_with_the_official_size_when_the_dataset_is_not_here(self):
        empty = os.path.join(self.tmp, "no-data")
        os.makedirs(empty, exist_ok=True)
        cmd = [EXE, "--data_dir", empty, "--dataset", "mnist", "--workers", "2", "--batch_size", "10",
               "--epochs", "1", "--output", os.path.join(self.tmp, "dry-no-data")]
        r = subprocess.run(cmd + ["--dry_run"], capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        if "# mnist was not found" not in r.stdout:
            self.skipTest("MNIST is installed on this machine, so the dry run used it")
        self.assertIn("costs assume its official 60000 training images", r.stdout)
        self.assertIn("tools/fetch-datasets mnist", r.stdout)
        self.assertRegex(r.stdout, r"\n +1 +[0-9a-f]{16} +to run +60000 ")  # 3,000 steps x 2 workers x 10
        # A run still needs the files, and says where it looked.
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("mnist: the train split was not found. Searched, in order:", r.stderr)  # train first

if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], *sys.argv[4:]], verbosity=2)
