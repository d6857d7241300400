#!/usr/bin/env python3
"""The reproducibility contract across process layouts: the same study run in one
process, and under mpirun with 2 and 4 processes per run (recursive halving), 3
(the gather fallback) and 4 processes holding 2 runs at a time, gives bit for
bit the same metrics in every run file and in the index. Checkpoints and
signals work across the processes of a run.

usage: test_mpi_layouts.py WORKLOAD_EXE DPSTUDY_DATA MPIEXEC [TEST...] (mpi_fixture.py)
"""
import os
import subprocess
import sys
import unittest

import h5py

from e2e_support import MPI_ENV
from h5compare import assert_same_study
from mpi_fixture import EXE, MPIEXEC, SMALL, MpiStudies


def cpu_has_bf16():
    """As the engine's cpu_has_bf16(): bfloat16 instructions among the first CPU's flags."""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith(("flags", "Features")):
                return bool({"avx512_bf16", "amx_bf16", "bf16"} & set(line.split(":", 1)[-1].split()))
    return False


class Layouts(MpiStudies):
    """The same bits on every layout, checkpoints and signals across processes."""

    def test_default_threads_follow_the_binding(self):
        # Open MPI binds a lone process to one core: as many threads as it may use there
        # (one), not one per core of the node; unbound, the node's cores.
        base = [EXE, "--data_dir", self.data, "--dataset", "mnist", "--batch_size", "10", "--epochs", "1"]
        for binding in ([], ["--bind-to", "none"]):
            launch = [MPIEXEC, "-n", "1", *binding]
            bound = subprocess.run(launch + [sys.executable, "-c", "import os; print(len(os.sched_getaffinity(0)))"],
                                   capture_output=True, text=True, env=MPI_ENV, timeout=120, check=True)
            threads = min(int(bound.stdout.split()[-1]), os.cpu_count())
            r = subprocess.run(launch + base, capture_output=True, text=True, env=MPI_ENV, timeout=600)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn(f"intra-op threads {threads};", r.stdout, binding)

    def test_power_of_two_layouts_give_the_same_bits(self):
        args = ["--workers", "4", "--sync_period", "1,3", "--group_size", "2", "--group_sync_period", "2",
                "--overlap", "0.25", "--validation_fraction", "0.1", "--seeds", "2"]
        one = os.path.join(self.tmp, "p1")
        r, _ = self.study(one, 0, *args)
        self.assertEqual(r.returncode, 0, r.stderr)
        for procs, per_run in ((2, 2), (4, 4), (4, 2), (4, 1)):
            out = os.path.join(self.tmp, f"n{procs}-p{per_run}")
            r, _ = self.study(out, procs, *args, "--procs_per_run", str(per_run))
            self.assertEqual(r.returncode, 0, f"-n {procs} --procs_per_run {per_run}: {r.stdout}\n{r.stderr}")
            runs = assert_same_study(self, os.path.join(one, "s"), os.path.join(out, "s"))
            self.assertEqual(len(runs), 4)
            with h5py.File(os.path.join(out, "s", "runs", runs[0]), "r") as f:
                self.assertEqual(f["provenance"].attrs["processes"], per_run)

    def test_label_skew_and_evaluations_at_averagings_give_the_same_bits(self):
        # Shards drawn per class from Dirichlet(0.5), with evaluations after every
        # world averaging, the households averaging in between: 1 process against 2 and 4.
        args = ["--workers", "4", "--dirichlet_alpha", "0.5", "--overlap", "0.25", "--overlap_mode", "spread",
                "--sync_period", "4", "--group_size", "2", "--group_sync_period", "2", "--eval_at_sync", "1",
                "--seeds", "2", *SMALL]
        one = os.path.join(self.tmp, "skew1")
        r, _ = self.study(one, 0, *args)
        self.assertEqual(r.returncode, 0, r.stderr)
        with h5py.File(os.path.join(one, "s", "index.h5"), "r") as f:
            self.assertTrue(all(a == 0.5 for a in f["index"]["dirichlet_alpha"][()]))
            self.assertTrue(all(0 <= a <= 1 for a in f["index"]["final_synced_test_accuracy"][()]))
        for procs in (2, 4):
            out = os.path.join(self.tmp, f"skew{procs}")
            r, _ = self.study(out, procs, *args, "--procs_per_run", str(procs))
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            runs = assert_same_study(self, os.path.join(one, "s"), os.path.join(out, "s"))
            self.assertEqual(len(runs), 2)
            with h5py.File(os.path.join(out, "s", "runs", runs[0]), "r") as f:
                at_sync = f["eval"]["step"][()][f["eval"]["synced"][()] == 1]
            self.assertEqual(list(at_sync), [4, 8, 12, 16, 20, 24])  # the world averagings, 2 epochs of 12 steps

    def test_workers_side_by_side_give_one_thread_per_process_bits(self):
        # The laptop and the cluster: 4 workers in one process on 2 threads (--parallel
        # auto: side by side, each on one thread) against 2 processes of one thread each.
        # On the CPU: on a GPU, auto spreads each operation (the GPU's threads are its own).
        args = ["--workers", "4", "--sync_period", "1,3", "--overlap", "0.25", "--validation_fraction", "0.1",
                "--sparsity", "0.5", "--device", "cpu"]
        cluster = os.path.join(self.tmp, "t-cluster")
        r, _ = self.study(cluster, 2, *args)
        self.assertEqual(r.returncode, 0, r.stderr)
        laptop = os.path.join(self.tmp, "t-laptop")
        cmd = [EXE, "--data_dir", self.data, "--dataset", "mnist", "--batch_size", "10", "--epochs", "2",
               "--eval_every", "7", "--output", laptop, "--name", "s", "--quiet", "--threads", "2", *args]
        r = subprocess.run(cmd, capture_output=True, text=True, env=MPI_ENV, timeout=600)
        self.assertEqual(r.returncode, 0, r.stderr)
        runs = assert_same_study(self, os.path.join(cluster, "s"), os.path.join(laptop, "s"))
        self.assertEqual(len(runs), 2)
        with h5py.File(os.path.join(laptop, "s", "runs", runs[0]), "r") as f:
            self.assertEqual(f["provenance"].attrs["threads"], 2)
            self.assertEqual(f["provenance"].attrs["parallel"], "workers")

    def test_bf16_runs_give_the_same_bits_on_every_layout(self):
        # --precision bf16 (autocast, float32 weights) where this CPU has bfloat16
        # instructions: 1 process on 1 thread, 4 workers side by side on 2 threads, and 2
        # processes give the same bits, and fp32 others. Elsewhere it is refused.
        args = ["--workers", "4", "--sync_period", "1,4", "--device", "cpu", *SMALL]
        if not cpu_has_bf16():
            r, _ = self.study(os.path.join(self.tmp, "bf16-refused"), 0, *args, "--precision", "bf16")
            self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
            self.assertIn("needs a CPU with bfloat16 instructions", r.stderr)
            return
        one = os.path.join(self.tmp, "bf16-1")
        self.assertEqual(self.study(one, 0, *args, "--precision", "bf16")[0].returncode, 0)
        two = os.path.join(self.tmp, "bf16-2")
        r, _ = self.study(two, 2, *args, "--precision", "bf16", "--procs_per_run", "2")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(len(assert_same_study(self, os.path.join(one, "s"), os.path.join(two, "s"))), 2)
        side = os.path.join(self.tmp, "bf16-side")
        cmd = [EXE, "--data_dir", self.data, "--dataset", "mnist", "--batch_size", "10", "--epochs", "2",
               "--eval_every", "7", "--output", side, "--name", "s", "--quiet", "--threads", "2", *args,
               "--precision", "bf16"]
        r = subprocess.run(cmd, capture_output=True, text=True, env=MPI_ENV, timeout=600)
        self.assertEqual(r.returncode, 0, r.stderr)
        assert_same_study(self, os.path.join(one, "s"), os.path.join(side, "s"))
        fp32 = os.path.join(self.tmp, "bf16-fp32")
        self.assertEqual(self.study(fp32, 0, *args)[0].returncode, 0)
        losses = {}
        for name, folder in (("bf16", one), ("fp32", fp32)):
            with h5py.File(os.path.join(folder, "s", "index.h5"), "r") as f:
                losses[name] = sorted(f["index"]["final_test_loss"][()])
                precision = {p.decode() if isinstance(p, bytes) else p for p in f["index"]["precision"][()]}
            self.assertEqual(precision, {name})
        self.assertNotEqual(losses["bf16"], losses["fp32"])

    def test_three_processes_use_the_gather_fallback_with_the_same_bits(self):
        args = ["--workers", "6", "--sync_period", "1,4", "--group_size", "2", "--sparsity", "0.5",
                "--group_sync_period", "2", *SMALL]
        one = os.path.join(self.tmp, "g1")
        self.assertEqual(self.study(one, 0, *args)[0].returncode, 0)
        out = os.path.join(self.tmp, "g3")
        r, _ = self.study(out, 3, *args, "--procs_per_run", "3")
        self.assertEqual(r.returncode, 0, r.stderr)
        assert_same_study(self, os.path.join(one, "s"), os.path.join(out, "s"))

    def test_killed_mpi_study_resumes_from_per_process_checkpoints(self):
        args = [*SMALL, "--workers", "2", "--sync_period", "1,4", "--checkpoint_steps", "10", "--procs_per_run", "2"]
        out = os.path.join(self.tmp, "killed")
        r, _ = self.study(out, 2, *args, env=dict(MPI_ENV, DPSTUDY_TEST_KILL_AT="step:25"))
        self.assertNotEqual(r.returncode, 0)
        ckpts = sorted(f for f in os.listdir(os.path.join(out, "s", "runs")) if ".ckpt." in f)
        self.assertEqual(len(ckpts), 2, ckpts)  # one per process: r0of2, r1of2
        self.assertTrue(ckpts[0].endswith(".ckpt.r0of2.h5"), ckpts)
        # Watched from one process (a login node): resumable, with what is left after
        # step 20 of 48 (20 steps of W b = 20 samples: 960 - 400).
        r, _ = self.study(out, 0, *args[:-2], "--dry_run")
        self.assertRegex(r.stdout, ckpts[0].split(".")[0] + r" +resumable +560 +sync_period=1")
        r, _ = self.study(out, 2, *args)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(out, "s", "log.txt")) as log:
            self.assertIn("resuming from its checkpoint at step 20", log.read())
        self.assertEqual([f for f in os.listdir(os.path.join(out, "s", "runs")) if ".ckpt." in f], [])
        self.same_as_one_process(out, args[:-2])

    def test_a_signal_to_one_process_stops_its_run_on_both_at_one_step(self):
        # Rank 1 alone gets SIGTERM at its 25th step (a signal reaches processes at
        # different steps): both processes checkpoint that step, nothing else
        # starts (placed dynamically or in advance), every process exits 5; the
        # study resumes to the bits of one process.
        for placement in ("dynamic", "static"):
            with self.subTest(placement=placement):
                args = ["--workers", "2", "--sync_period", "1,4", "--procs_per_run", "2", "--placement", placement]
                out = os.path.join(self.tmp, "signalled-" + placement)
                env = dict(MPI_ENV, DPSTUDY_TEST_KILL_AT="step:25", DPSTUDY_TEST_KILL_SIGNAL="TERM",
                           DPSTUDY_TEST_KILL_RANK="1")
                r, _ = self.study(out, 2, *args, env=env)
                self.assertEqual(r.returncode, 5, r.stdout + r.stderr)
                runs = os.path.join(out, "s", "runs")
                ckpts = sorted(f for f in os.listdir(runs) if ".ckpt." in f)
                self.assertEqual([c.split(".", 1)[1] for c in ckpts], ["ckpt.r0of2.h5", "ckpt.r1of2.h5"])
                for c in ckpts:
                    with h5py.File(os.path.join(runs, c), "r") as f:
                        self.assertEqual(int(f.attrs["step"]), 25, c)
                self.assertEqual([f for f in os.listdir(runs) if not f.endswith(".h5")], [])  # no claim left
                r, _ = self.study(out, 2, *args)
                self.assertEqual(r.returncode, 0, r.stderr)
                with open(os.path.join(out, "s", "log.txt")) as log:
                    text = log.read()
                self.assertEqual(text.count(": starting on ranks"), 3, text)  # one run stopped, none begun after
                # The log is the first process's; rank 1 had the signal.
                self.assertIn("stopped by a signal to another process at step 25 of 48", text)
                self.assertIn("resuming from its checkpoint at step 25", text)
                self.same_as_one_process(out, args[:-4])

    def test_a_run_one_group_stopped_is_finished_by_another(self):
        # Two groups of one process: rank 1 alone gets SIGTERM in its first run, which
        # it checkpoints; rank 0 then resumes that run from its checkpoint. Every run
        # is finished, so the job exits 0 and says there is nothing to resume. (16
        # runs of 0.2 s: rank 0 is still taking runs when rank 1 stops, even if rank
        # 1 started a second late; with 2 runs it had sometimes finished its own.)
        args = ["--workers", "2", "--sync_period", "1,4", "--seeds", "8", "--procs_per_run", "1"]
        out = os.path.join(self.tmp, "finished-by-another")
        env = dict(MPI_ENV, DPSTUDY_TEST_KILL_AT="step:25", DPSTUDY_TEST_KILL_SIGNAL="TERM", DPSTUDY_TEST_KILL_RANK="1")
        r, _ = self.study(out, 2, *args, env=env)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        runs = os.path.join(out, "s", "runs")
        self.assertEqual(sorted(f for f in os.listdir(runs) if not f.endswith(".h5") or ".ckpt." in f), [])
        with open(os.path.join(out, "s", "log.txt")) as log:
            text = log.read()
        self.assertIn("resuming from its checkpoint at step 25", text)
        self.assertRegex(text, r"# study s done: 16 runs in .*; a signal to another process came, but every run is "
                               r"finished .*: nothing to resume")
        self.same_as_one_process(out, args[:-2])

    def test_a_checkpoint_unreadable_on_one_process_restarts_the_run_on_all(self):
        # A read that fails on rank 1 alone (a parallel file system): both start
        # over together, rather than training from different steps.
        args = [*SMALL, "--workers", "2", "--sync_period", "1", "--procs_per_run", "2", "--checkpoint_steps", "10"]
        out = os.path.join(self.tmp, "unreadable")
        r, _ = self.study(out, 2, *args, env=dict(MPI_ENV, DPSTUDY_TEST_KILL_AT="step:25"))
        self.assertNotEqual(r.returncode, 0)
        env = dict(MPI_ENV, DPSTUDY_TEST_FAIL_AT="checkpoint-read:1", DPSTUDY_TEST_FAIL_RANK="1")
        r, _ = self.study(out, 2, *args, env=env)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(os.path.join(out, "s", "log.txt")) as log:
            self.assertIn("checkpoint unusable (on another process of the run); starting over", log.read())
        self.same_as_one_process(out, args[:-4])

    def test_checkpoints_by_time_are_taken_at_one_step_on_every_process(self):
        # --checkpoint_interval counts on each process's own clock; the processes
        # agree on the step, so that a kill leaves one set that resumes.
        args = ["--workers", "2", "--sync_period", "1", "--procs_per_run", "2", "--checkpoint_interval", "0.01"]
        out = os.path.join(self.tmp, "timed")
        r, _ = self.study(out, 2, *args, env=dict(MPI_ENV, DPSTUDY_TEST_KILL_AT="step:40"))
        self.assertNotEqual(r.returncode, 0)
        runs = os.path.join(out, "s", "runs")
        steps = set()
        for c in (f for f in os.listdir(runs) if ".ckpt." in f):
            with h5py.File(os.path.join(runs, c), "r") as f:
                steps.add(int(f.attrs["step"]))
        self.assertEqual(len(steps), 1, steps)
        r, _ = self.study(out, 2, *args)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(out, "s", "log.txt")) as log:
            self.assertIn(f"resuming from its checkpoint at step {steps.pop()}", log.read())

    def test_checkpoints_of_another_layout_are_not_used_and_are_removed(self):
        args = ["--workers", "2", "--sync_period", "1,4", "--checkpoint_steps", "10"]
        out = os.path.join(self.tmp, "relayout")
        r, _ = self.study(out, 2, *args, "--procs_per_run", "2", env=dict(MPI_ENV, DPSTUDY_TEST_KILL_AT="step:25"))
        self.assertNotEqual(r.returncode, 0)
        r, _ = self.study(out, 0, *args)  # one process now
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(out, "s", "log.txt")) as log:
            self.assertIn("its checkpoints are not a complete set for 1 process(es) at one step", log.read())
        self.assertEqual([f for f in os.listdir(os.path.join(out, "s", "runs")) if ".ckpt." in f], [])
        self.same_as_one_process(out, args[:-2])

if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], *sys.argv[4:]], verbosity=2)
