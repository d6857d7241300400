#!/usr/bin/env python3
"""The reproducibility contract across process layouts: the same study run in one
process, and under mpirun with 2 and 4 processes per run (recursive halving), 3
(the gather fallback) and 4 processes holding 2 runs at a time, gives bit for
bit the same metrics in every run file and in the index, whether groups of
processes take runs as they become free (dynamic placement) or as placed in
advance. And a rank that fails aborts the whole job quickly, keeping every
finished run.

usage: test_mpi_layouts.py WORKLOAD_EXE DPSTUDY_DATA MPIEXEC [Layouts|Jobs]
(CTest runs the two halves apart, mpi_layouts and mpi_jobs, so that they run side by side.)
"""
import glob
import os
import re
import subprocess
import sys
import time
import unittest

import h5py

from e2e_support import MPI_ENV, PLAINEST_ATEN, TempFolderTest, make_fixtures, start_until
from h5compare import assert_same_study

EXE, DATA_TOOL, MPIEXEC = sys.argv[1], sys.argv[2], sys.argv[3]
ENV = dict(MPI_ENV, OMPI_MCA_rmaps_base_oversubscribe="1")
# A small MLP (51k parameters, not 670k) where a test is about placement, failures
# or checkpoints, not the averaging of a model-sized buffer: each study takes half
# the time. The default model's layouts are checked in the power-of-two test.
SMALL = ["--hidden", "64"]


def cpu_has_bf16():
    """As the engine's cpu_has_bf16(): bfloat16 instructions among the first CPU's flags."""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith(("flags", "Features")):
                return bool({"avx512_bf16", "amx_bf16", "bf16"} & set(line.split(":", 1)[-1].split()))
    return False


class MpiStudies(TempFolderTest):
    """What both halves share: generated data and studies under mpirun or in one process."""
    prefix = "dpstudy-mpi-test-"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.data = make_fixtures(DATA_TOOL, os.path.join(cls.tmp, "data"), 480, 100)

    def study(self, output, procs, *args, env=None):
        # One thread per process in every layout: a thread count can change the bits (docs/engine.md).
        cmd = [EXE, "--data_dir", self.data, "--dataset", "mnist", "--batch_size", "10", "--epochs", "2",
               "--eval_every", "7", "--output", output, "--name", "s", "--quiet", "--threads", "1", *args]
        if procs:
            cmd = [MPIEXEC, "-n", str(procs), "--oversubscribe"] + cmd
        started = time.monotonic()
        r = subprocess.run(cmd, capture_output=True, text=True, env=env or ENV, timeout=600)
        return r, time.monotonic() - started

    def same_as_one_process(self, out, args):
        """The study in `out` equals, bit for bit, the same study (`args`) in one process."""
        ref = out + "-ref"
        self.assertEqual(self.study(ref, 0, *args)[0].returncode, 0)
        assert_same_study(self, os.path.join(ref, "s"), os.path.join(out, "s"))

    def side_by_side(self, output, procs_per_job, args):
        """Jobs started at once on one study (0: no mpirun); their logs, after each exited 0."""
        def cmd(procs):
            return ([MPIEXEC, "-n", str(procs), "--oversubscribe"] if procs else []) + [
                EXE, "--data_dir", self.data, "--dataset", "mnist", "--batch_size", "10", "--epochs", "2",
                "--eval_every", "7", "--output", output, "--name", "s", "--threads", "1", *args]
        jobs = [subprocess.Popen(cmd(p), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=ENV)
                for p in procs_per_job]
        logs = [j.communicate(timeout=600)[0] for j in jobs]
        for j, log in zip(jobs, logs):
            self.assertEqual(j.returncode, 0, log)
        return logs


class Layouts(MpiStudies):
    """The same bits on every layout, checkpoints and signals across processes."""

    def test_default_threads_follow_the_binding(self):
        # Open MPI binds a lone process to one core: as many threads as it may use there
        # (one), not one per core of the node; unbound, the node's cores.
        base = [EXE, "--data_dir", self.data, "--dataset", "mnist", "--batch_size", "10", "--epochs", "1"]
        for binding in ([], ["--bind-to", "none"]):
            launch = [MPIEXEC, "-n", "1", *binding]
            bound = subprocess.run(launch + [sys.executable, "-c", "import os; print(len(os.sched_getaffinity(0)))"],
                                   capture_output=True, text=True, env=ENV, timeout=120, check=True)
            threads = min(int(bound.stdout.split()[-1]), os.cpu_count())
            r = subprocess.run(launch + base, capture_output=True, text=True, env=ENV, timeout=600)
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
        r = subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=600)
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
        r = subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=600)
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
        r, _ = self.study(out, 2, *args, env=dict(ENV, DPSTUDY_TEST_KILL_AT="step:25"))
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
                env = dict(ENV, DPSTUDY_TEST_KILL_AT="step:25", DPSTUDY_TEST_KILL_SIGNAL="TERM",
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
        env = dict(ENV, DPSTUDY_TEST_KILL_AT="step:25", DPSTUDY_TEST_KILL_SIGNAL="TERM", DPSTUDY_TEST_KILL_RANK="1")
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
        r, _ = self.study(out, 2, *args, env=dict(ENV, DPSTUDY_TEST_KILL_AT="step:25"))
        self.assertNotEqual(r.returncode, 0)
        env = dict(ENV, DPSTUDY_TEST_FAIL_AT="checkpoint-read:1", DPSTUDY_TEST_FAIL_RANK="1")
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
        r, _ = self.study(out, 2, *args, env=dict(ENV, DPSTUDY_TEST_KILL_AT="step:40"))
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
        r, _ = self.study(out, 2, *args, "--procs_per_run", "2", env=dict(ENV, DPSTUDY_TEST_KILL_AT="step:25"))
        self.assertNotEqual(r.returncode, 0)
        r, _ = self.study(out, 0, *args)  # one process now
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(out, "s", "log.txt")) as log:
            self.assertIn("its checkpoints are not a complete set for 1 process(es) at one step", log.read())
        self.assertEqual([f for f in os.listdir(os.path.join(out, "s", "runs")) if ".ckpt." in f], [])
        self.same_as_one_process(out, args[:-2])


class Jobs(MpiStudies):
    """Jobs sharing a study, dynamic placement, and errors of some processes ending the job."""

    def test_jobs_started_side_by_side_share_a_study(self):
        # Two jobs on one study (a job array, or a second allocation): each run is
        # trained once among them, with the bits of a single job; a run another job
        # is training is left to it.
        args = ["--workers", "2", "--sync_period", "1,4", "--seeds", "8"]
        one = os.path.join(self.tmp, "shared-ref")
        self.assertEqual(self.study(one, 0, *args)[0].returncode, 0)
        out = os.path.join(self.tmp, "shared")
        logs = self.side_by_side(out, (0, 2), args)
        started = sum(log.count(": starting") for log in logs)
        self.assertEqual(started, 16, "\n".join(logs))
        self.assertTrue(all(log.count(": starting") > 0 for log in logs), "both jobs took runs")
        self.assertEqual(len(assert_same_study(self, os.path.join(one, "s"), os.path.join(out, "s"))), 16)
        runs = os.path.join(out, "s", "runs")
        self.assertEqual([f for f in os.listdir(runs) if f.endswith(".claim") or f.endswith(".tmp")], [])
        # A live claim of another job: this job leaves that run, says so, and its dry run shows it running.
        ids = sorted(f[:-3] for f in os.listdir(runs))
        os.remove(os.path.join(runs, ids[0] + ".h5"))
        with open(os.path.join(runs, ids[0] + ".claim"), "w") as f:
            f.write("another-node 4242\n")
        r, _ = self.study(out, 0, *args, "--dry_run")
        self.assertRegex(r.stdout, ids[0] + r" +running")
        r, _ = self.study(out, 0, *args)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("1 of 16 runs are still running in another job", r.stdout)
        self.assertRegex(r.stdout, ids[0] + r" +elsewhere")
        self.assertFalse(os.path.exists(os.path.join(runs, ids[0] + ".h5")))
        # Once that job stops refreshing its claim, the run is taken over.
        r, _ = self.study(out, 0, *args, "--claim_timeout", "0.5")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(assert_same_study(self, os.path.join(one, "s"), os.path.join(out, "s"))), 16)

    def test_jobs_with_runs_of_several_sizes_share_a_study_too(self):
        # Runs of 1 and 2 workers under -n 2 take 1 and 2 processes: placed in
        # advance (static), or taken by a group of 2 that splits when no 2-process
        # run is left (dynamic); either way each run once beside a single-process
        # job on the same study, with the bits of one process.
        args = ["--workers", "1,2", "--sync_period", "1,4", "--seeds", "4"]
        one = os.path.join(self.tmp, "sizes-ref")
        self.assertEqual(self.study(one, 0, *args)[0].returncode, 0)
        for placement, plan in (("static", "placed in advance"), ("dynamic", "in groups of 2, then 1")):
            out = os.path.join(self.tmp, "sizes-" + placement)
            self.assertIn(plan, self.study(out, 2, *args, "--placement", placement, "--dry_run")[0].stdout)
            logs = self.side_by_side(out, (2, 0), args + ["--placement", placement])
            # 16 cells, 12 runs: one worker's two sync periods share a run.
            self.assertEqual(sum(log.count(": starting") for log in logs), 12, "\n".join(logs))
            self.assertEqual(len(assert_same_study(self, os.path.join(one, "s"), os.path.join(out, "s"))), 12)

    def test_a_split_group_takes_a_run_of_its_former_size_left_stale_meanwhile(self):
        # Another job (a live process of this host) holds a 2-process run, so the
        # group of 2 splits and its processes take the 1-process runs. That job
        # dies meanwhile: once every process is through, the group forms again and
        # trains the run instead of leaving it to a later job.
        args = ["--workers", "1,2", "--sync_period", "1,4", "--seeds", "2"]
        one = os.path.join(self.tmp, "regroup-ref")
        self.assertEqual(self.study(one, 0, *args)[0].returncode, 0)
        with h5py.File(os.path.join(one, "s", "index.h5"), "r") as f:
            rows = list(zip(f["index"]["run_id"][()], f["index"]["workers"][()]))
        held = next(run_id.decode() for run_id, workers in rows if workers == 2)
        out = os.path.join(self.tmp, "regroup")
        runs = os.path.join(out, "s", "runs")
        os.makedirs(runs)
        holder = subprocess.Popen(["sleep", "600"])
        try:
            with open(os.path.join(runs, held + ".claim"), "w") as f:
                f.write(f"{os.uname().nodename} {holder.pid}\n")
            cmd = [MPIEXEC, "-n", "2", "--oversubscribe", EXE, "--data_dir", self.data, "--dataset", "mnist",
                   "--batch_size", "10", "--epochs", "2", "--eval_every", "7", "--output", out, "--name", "s",
                   "--threads", "1", *args]
            job = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=ENV)
            log_path, deadline = os.path.join(out, "s", "log.txt"), time.monotonic() + 300
            while time.monotonic() < deadline and job.poll() is None:
                if os.path.exists(log_path):
                    with open(log_path) as log:
                        if any(": starting" in line and "workers=1" in line for line in log):
                            break
                time.sleep(0.02)
        finally:
            holder.kill()
            holder.wait()
        log = job.communicate(timeout=600)[0]
        self.assertEqual(job.returncode, 0, log)
        with open(log_path) as f:
            started = [line for line in f.read().splitlines() if ": starting" in line]
        # 8 cells, 6 runs: one worker's two sync periods share a run.
        self.assertEqual(len(started), 6, started)
        self.assertIn(held, started[-1])  # after the 1-process runs
        self.assertEqual(len(assert_same_study(self, os.path.join(one, "s"), os.path.join(out, "s"))), 6)
        self.assertEqual([f for f in os.listdir(runs) if f.endswith(".claim") or f.endswith(".tmp")], [])

    def test_dynamic_placement_runs_each_run_once_with_the_same_bits(self):
        args = ["--workers", "2", "--sync_period", "1,4", "--seeds", "4", *SMALL]
        one = os.path.join(self.tmp, "dyn1")
        self.assertEqual(self.study(one, 0, *args)[0].returncode, 0)
        out = os.path.join(self.tmp, "dyn3")
        runs = os.path.join(out, "s", "runs")
        # Claims left by killed jobs do not keep their runs from being done: one of
        # another host that stopped refreshing it, one of a process of this host that is gone.
        os.makedirs(runs)
        ids = sorted(f[:-3] for f in os.listdir(os.path.join(one, "s", "runs")))
        with open(os.path.join(runs, ids[0] + ".claim"), "w") as f:
            f.write("killed-host 1\n")
        hour_ago = time.time() - 3600
        os.utime(os.path.join(runs, ids[0] + ".claim"), (hour_ago, hour_ago))
        gone = subprocess.Popen(["true"])
        gone.wait()
        with open(os.path.join(runs, ids[1] + ".claim"), "w") as f:
            f.write(f"{os.uname().nodename} {gone.pid}\n")
        r, _ = self.study(out, 3, *args, "--procs_per_run", "1")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(len(assert_same_study(self, os.path.join(one, "s"), os.path.join(out, "s"))), 8)
        with open(os.path.join(out, "s", "log.txt")) as log:
            text = log.read()
        self.assertEqual(text.count(": starting"), 8, text)  # each run once, among the 3 processes
        self.assertEqual(text.count(": completed, final test accuracy"), 8, text)
        self.assertEqual([f for f in os.listdir(runs) if f.endswith(".claim")], [])
        # Two processes, each training two runs at once in threads: each run once among the four.
        both = os.path.join(self.tmp, "dyn2x2")
        r, _ = self.study(both, 2, *args, "--procs_per_run", "1", "--runs_at_once", "2")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(len(assert_same_study(self, os.path.join(one, "s"), os.path.join(both, "s"))), 8)
        with open(os.path.join(both, "s", "log.txt")) as log:
            self.assertEqual(log.read().count(": starting"), 8)
        # The plan says how runs will be placed; planned from one process for N (--dry_run_processes, a
        # login node), as under mpirun -n N.
        def plan(procs, *plan_args):
            r, _ = self.study(os.path.join(self.tmp, "dyn-plan"), 0, *plan_args, "--dry_run",
                              "--dry_run_processes", str(procs))
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            return r
        r = plan(4, *args, "--procs_per_run", "2")
        self.assertIn("in 2 group(s) of 2, taken in this order as groups become free", r.stdout)
        # 1, 2 and 4 processes per run: the 4-process runs first, then two groups of 2, then 4 of 1.
        mixed = ["--workers", "1,2,4", "--sync_period", "1,4", "--seeds", "2", *SMALL]
        r = plan(4, *mixed)
        under_mpirun, _ = self.study(os.path.join(self.tmp, "dyn-plan"), 4, *mixed, "--dry_run")
        self.assertEqual(r.stdout, under_mpirun.stdout)
        self.assertIn("# results: " + os.path.join(self.tmp, "dyn-plan", "s") + "; 4 process(es)", r.stdout)
        self.assertIn("in groups of 4, then 2, then 1: a group takes the runs of its size", r.stdout)
        self.assertRegex(r.stdout, r"# schedule: .*\n.*\n +\d+ +[0-9a-f]{16} +0,1,2,3 +0 +240\n")
        self.assertRegex(r.stdout, r" 2,3 +960 +1440\n")
        one, out = os.path.join(self.tmp, "mixed1"), os.path.join(self.tmp, "mixed4")
        self.assertEqual(self.study(one, 0, *mixed)[0].returncode, 0)
        r, _ = self.study(out, 4, *mixed)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        # 12 cells, 10 runs: one worker's two sync periods share a run (docs/studies.md#shared-runs).
        self.assertEqual(len(assert_same_study(self, os.path.join(one, "s"), os.path.join(out, "s"))), 10)
        with open(os.path.join(out, "s", "log.txt")) as log:
            lines = log.read().splitlines()
        started = [line for line in lines if ": starting" in line]
        self.assertEqual(len(started), 10)
        self.assertTrue(all("workers=4" in line for line in started[:4]), started)  # the largest first
        # A block splits only once its size has no run left, so a smaller run starts after a larger one of its
        # block completed. The order of "starting" lines between blocks is not the order of their claims (a group
        # agrees on its run before its line is written), so only this is asserted.
        for size, larger, need in (("2", "4", 4), ("1", "2", 1)):
            first = next(n for n, line in enumerate(lines) if f"workers={size} " in line and ": starting" in line)
            done = [line for line in lines[:first] if f"workers={larger} " in line and ": completed" in line]
            self.assertGreaterEqual(len(done), need, lines)
        # Sizes that do not nest into the job (groups of 2 cannot tile 5 processes): static.
        r = plan(5, "--workers", "2,4")
        self.assertIn("placed in advance, largest estimated cost first (its runs' processes per run do not nest",
                      r.stdout)
        r = plan(3, *args, "--procs_per_run", "2")
        self.assertIn("placed in advance, largest estimated cost first (the processes per run do not divide the "
                      "processes)", r.stdout)
        # A run the planned job cannot hold is refused before it queues.
        r, _ = self.study(os.path.join(self.tmp, "dyn-plan"), 0, *args, "--procs_per_run", "2", "--dry_run",
                          "--dry_run_processes", "1")
        self.assertEqual(r.returncode, 2, r.stdout)
        self.assertIn("--procs_per_run: '2' must divide workers (2) and be at most the 1 processes of the job",
                      r.stderr)

    def test_a_failing_rank_aborts_a_dynamically_placed_job(self):
        out = os.path.join(self.tmp, "fail-dyn")
        env = dict(ENV, DPSTUDY_TEST_FAIL_AT="step:30", DPSTUDY_TEST_FAIL_RANK="1")
        # 8 runs of 48 steps for 2 processes: rank 1 takes one of them long before rank 0 could finish them all.
        r, seconds = self.study(out, 2, "--workers", "2", "--seeds", "8", "--procs_per_run", "1", env=env)
        self.assertNotEqual(r.returncode, 0)
        self.assertLess(seconds, 120)
        self.assertRegex(r.stderr, r"error: rank 1 on \S+, run [0-9a-f]{16}: injected failure")
        for name in os.listdir(os.path.join(out, "s", "runs")):
            if name.endswith(".h5") and ".ckpt." not in name:
                with h5py.File(os.path.join(out, "s", "runs", name), "r") as f:
                    self.assertEqual(f["summary"].attrs["status"], "completed")

    def test_an_error_of_every_process_is_printed_once(self):
        # Every process reads the same command line: one message, as one process prints it,
        # and no MPI_Abort (its banners buried the message under one copy per rank).
        r, _ = self.study(os.path.join(self.tmp, "every-process-error"), 2, "--sync_period", "1.5")
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertEqual(r.stderr.count("error:"), 1, r.stderr)
        self.assertIn("dpstudy-mlp-mnist: error: --sync_period: '1.5' must be a whole number of steps >= 1, or never\n"
                      "(see dpstudy-mlp-mnist --help)", r.stderr)
        self.assertNotIn("MPI_ABORT", r.stderr)
        # So is an error of rank 0 in a step it takes alone (the results folder) while the others wait.
        not_a_folder = os.path.join(self.tmp, "a-file")
        with open(not_a_folder, "w", encoding="utf-8") as f:
            f.write("not a folder\n")
        r, _ = self.study(os.path.join(not_a_folder, "out"), 2)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertEqual(r.stderr.count("error:"), 1, r.stderr)
        self.assertIn(f"dpstudy-mlp-mnist: error: {not_a_folder}/out/s/runs: cannot create or write the results "
                      "folder", r.stderr)
        self.assertNotIn("MPI_ABORT", r.stderr)
        # And one in its end (the index rewritten after every process is through: a full disk, here an injected
        # failure of the third index write, after the two runs'): the runs are kept, and the study ends well
        # when run again.
        out = os.path.join(self.tmp, "end-error")
        args = ("--workers", "2", "--procs_per_run", "2", "--seeds", "2")
        failing = dict(ENV, DPSTUDY_TEST_FAIL_AT="index-write:3", DPSTUDY_TEST_FAIL_RANK="0")
        r, _ = self.study(out, 2, *args, env=failing)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertEqual(r.stderr.count("error:"), 1, r.stderr)
        self.assertIn("dpstudy-mlp-mnist: error: injected failure (DPSTUDY_TEST_FAIL_AT=index-write:3)", r.stderr)
        self.assertNotIn("MPI_ABORT", r.stderr)
        self.assertEqual(len(glob.glob(os.path.join(out, "s", "runs", "*.h5"))), 2)
        r, _ = self.study(out, 2, *args)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        # So is --version (and --help): once.
        r = subprocess.run([MPIEXEC, "-n", "2", EXE, "--version"], capture_output=True, text=True, env=ENV,
                           timeout=120)
        self.assertEqual((r.returncode, r.stdout.count("dpstudy-mlp-mnist dpstudy ")), (0, 1), r.stdout + r.stderr)
        # So is a run the job's processes cannot host, found at the start (the study's schedule and a run's
        # communicator had met it on every process, each printing it and aborting the job).
        r, _ = self.study(os.path.join(self.tmp, "cannot-host"), 2, "--workers", "2", "--procs_per_run", "3")
        self.assertEqual((r.returncode, r.stderr.count("error:")), (2, 1), r.stdout + r.stderr)
        self.assertIn("dpstudy-mlp-mnist: error: --procs_per_run: '3' must divide workers (2) and be at most the 2 "
                      "processes of the job", r.stderr)
        self.assertNotIn("MPI_ABORT", r.stderr)
        r = subprocess.run([MPIEXEC, "-n", "2", EXE, "--data_dir", self.data, "--dataset", "mnist", "--workers", "3",
                            "--epochs", "1"], capture_output=True, text=True, env=ENV, timeout=120)
        self.assertEqual((r.returncode, r.stderr.count("error:")), (2, 1), r.stdout + r.stderr)
        self.assertIn("dpstudy-mlp-mnist: error: --workers: '3' must be a multiple of the job's 2 processes: a run "
                      "outside a study spreads its workers over all of them", r.stderr)
        self.assertNotIn("MPI_ABORT", r.stderr)
        self.assertNotIn("# config:", r.stdout)  # refused before it starts
        # Groups of local SGD that would straddle processes unevenly: refused at the start, once.
        r, _ = self.study(os.path.join(self.tmp, "uneven-groups"), 2, "--workers", "12", "--group_size", "4",
                          "--group_sync_period", "2", "--sync_period", "4")
        self.assertEqual((r.returncode, r.stderr.count("error:")), (2, 1), r.stdout + r.stderr)
        self.assertIn("dpstudy-mlp-mnist: error: --group_size: '4' must divide, or be a multiple of, the workers per "
                      "process (12 / 2 processes = 6)", r.stderr)
        self.assertNotIn("MPI_ABORT", r.stderr)

    def without_line(self, stderr, line):
        # The launcher forwards each process's stderr as it reads it: rank 0's line can land
        # inside another rank's message (seen with Open MPI 5), which then reads whole without it.
        self.assertIn(line + "\n", stderr)
        return stderr.replace(line + "\n", "", 1)

    def test_an_error_of_one_process_names_its_rank(self):
        # A node without the data: that process's error with its rank and host, rank 0's
        # line saying which processes could not start, every process ended without waiting.
        out = os.path.join(self.tmp, "one-process-error")
        missing = os.path.join(self.tmp, "no-such-folder")
        rank = '"${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}"'
        cmd = [MPIEXEC, "-n", "3", "--oversubscribe", "sh", "-c",
               f'if [ {rank} = 1 ]; then D="$1"; else D="$2"; fi; shift 2; exec "$@" --data_dir "$D"', "sh",
               missing, self.data, EXE, "--dataset", "mnist", "--batch_size", "10", "--epochs", "1", "--output",
               out, "--threads", "1", "--quiet"]
        r = subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=120)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        rest = self.without_line(r.stderr, "dpstudy-mlp-mnist: error: 1 of 3 processes could not start (rank 1: its "
                                           "error printed apart); the job ends")
        self.assertRegex(rest, rf"error: rank 1 on \S+: --data_dir: '{missing}' does not exist")
        self.assertEqual(rest.count("error:"), 1, r.stderr)
        self.assertNotIn("MPI_ABORT", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(out, "mlp-mnist", "runs")))

    def test_processes_reading_other_data_files_end_the_job(self):
        # Copies local to each node can differ; a run over the processes would mix data or hang.
        other = make_fixtures(DATA_TOOL, os.path.join(self.tmp, "other-data"), 400, 100)
        out = os.path.join(self.tmp, "other-data-out")
        rank = '"${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}"'
        cmd = [MPIEXEC, "-n", "2", "sh", "-c", f'if [ {rank} = 1 ]; then DPSTUDY_DATA_DIR="$1"; else '
               'DPSTUDY_DATA_DIR="$2"; fi; export DPSTUDY_DATA_DIR; shift 2; exec "$@"', "sh", other, self.data,
               EXE, "--dataset", "mnist", "--batch_size", "10", "--epochs", "1", "--output", out, "--threads", "1",
               "--workers", "2", "--quiet"]
        r = subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=120)
        self.assertNotEqual(r.returncode, 0)
        rest = self.without_line(r.stderr, "dpstudy-mlp-mnist: error: 1 of 2 processes could not start (rank 1: its "
                                           "error printed apart); the job ends")
        self.assertRegex(rest, r"error: rank 1 on \S+: \S+: these data files differ from rank 0's: "
                               r"mnist/t10k-images-idx3-ubyte \(sha256=[0-9a-f]{12}\.\.\. on rank 0, "
                               r"sha256=[0-9a-f]{12}\.\.\. here\), .*give --data_dir a folder all nodes share")
        self.assertFalse(os.path.exists(os.path.join(out, "mlp-mnist", "runs")) and
                         any(f.endswith(".h5") for f in os.listdir(os.path.join(out, "mlp-mnist", "runs"))))
        # The same files on both: the run trains.
        cmd[cmd.index(other)] = self.data
        r = subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def run_on_two_kinds(self, name, export):
        """A run on 2 processes, rank 1's with `export` (VAR=VALUE) in its environment, as on a node of
        another kind: the job's result and the run's file."""
        out = os.path.join(self.tmp, name)
        rank = '"${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}"'
        cmd = [MPIEXEC, "-n", "2", "sh", "-c", f'if [ {rank} = 1 ]; then export {export}; fi; '
               'exec "$@"', "sh", EXE, "--data_dir", self.data, "--dataset", "mnist", "--batch_size", "10",
               "--epochs", "1", "--output", out, "--name", "s", "--threads", "1", "--workers", "2",
               "--procs_per_run", "2", "--quiet"]
        r = subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        (run,) = glob.glob(os.path.join(out, "s", "runs", "*.h5"))
        return r, run

    def test_processes_of_two_blas_builds_are_warned_of_and_recorded(self):
        # Nodes of two kinds in one allocation: OpenBLAS picks other kernels on each, as it
        # does here for rank 1 told to take the SSE3 (Prescott) ones.
        # Prescott's name sorts before this machine's kernels (Haswell, SkylakeX, ...), Zen's
        # after them: either way rank 0 comes first, in the warning as in the file.
        for kind in ("Prescott", "Zen"):
            with self.subTest(kind=kind):
                r, run = self.run_on_two_kinds("two-builds-" + kind, "OPENBLAS_CORETYPE=" + kind)
                with h5py.File(run, "r") as f:
                    prov = f["provenance"].attrs
                    blas, build, host = prov["blas"], prov["blas_build"], prov["hostname"]
                    self.assertEqual(prov["hosts"], host)  # both processes on this machine
                if not build.startswith("OpenBLAS"):
                    self.skipTest(f"not OpenBLAS ({blas}): OPENBLAS_CORETYPE changes nothing")
                if "|" not in build:
                    continue  # this machine's own kernels are Zen's
                # The run's file names both builds; the job said so before training.
                self.assertRegex(build, rf"^OpenBLAS .* \| OpenBLAS .* {kind} ")
                self.assertRegex(r.stdout, r"# warning: the job's processes call 2 BLAS builds \(rank 0 on \S+: "
                                           rf"OpenBLAS [^;]*; rank 1 on \S+: OpenBLAS .*{kind}.*\): a run on processes "
                                           r"of two builds does not give the bits of one process")
        # One build on both: nothing to say, and the file names one.
        r = self.study(os.path.join(self.tmp, "one-build"), 2, "--workers", "2", "--procs_per_run", "2")
        self.assertEqual(r[0].returncode, 0, r[0].stdout + r[0].stderr)
        self.assertNotIn("BLAS builds", r[0].stdout)
        (run,) = glob.glob(os.path.join(self.tmp, "one-build", "s", "runs", "*.h5"))
        with h5py.File(run, "r") as f:
            self.assertNotIn("|", f["provenance"].attrs["blas_build"])
            self.assertNotIn("|", f["provenance"].attrs["cpu_kernels"])

    def test_processes_of_two_sets_of_cpu_kernels_are_warned_of_and_recorded(self):
        # ATen picks its CPU kernels by CPU kind too; rank 1 here is told to take the plainest.
        r, run = self.run_on_two_kinds("two-kernel-sets", "ATEN_CPU_CAPABILITY=default")
        with h5py.File(run, "r") as f:
            kernels = f["provenance"].attrs["cpu_kernels"]
        if re.match(PLAINEST_ATEN, kernels):
            self.skipTest("ATen's plainest CPU kernels are already this CPU's")
        self.assertRegex(kernels, r"^ATen [A-Z0-9 ]+\S* .*\| " + PLAINEST_ATEN)
        self.assertRegex(r.stdout, r"# warning: the job's processes use 2 sets of CPU kernels \(rank 0 on \S+: ATen "
                                   r"[^;]+; rank 1 on \S+: " + PLAINEST_ATEN + r"[^;]*\): a run on processes of two "
                                   r"sets does not give the bits of one process")

    def test_groups_stop_taking_runs_once_another_job_finishes_one_on_other_files(self):
        # Job B trains seed 2 alone on one copy; job A, 2 processes taking runs on
        # another copy with slower runs, starts while B trains: each of A's groups,
        # back for its next run, finds seed 2 finished on other files and stops.
        out = os.path.join(self.tmp, "midway")
        # B's run outlasts mpirun's start (A's look must find it unfinished); A's outlast B's.
        data_b = make_fixtures(DATA_TOOL, os.path.join(self.tmp, "midway-data-b"), 1600, 100)
        slow = make_fixtures(DATA_TOOL, os.path.join(self.tmp, "midway-data-a"), 4000, 100)
        common = ["--dataset", "mnist", "--batch_size", "10", "--epochs", "10", "--threads", "1", "--output", out,
                  "--name", "shared"]
        # B holds its claim and trains: A's look finds nothing complete.
        b = start_until([EXE, "--data_dir", data_b, "--seed", "2", *common], "starting", env=ENV)
        a = subprocess.run([MPIEXEC, "-n", "2", "--oversubscribe", EXE, "--data_dir", slow, "--seeds", "6", *common],
                           capture_output=True, text=True, env=ENV, timeout=600)
        b_out, b_err = b.communicate(timeout=600)
        self.assertEqual(b.returncode, 0, b_out + b_err)
        self.assertNotEqual(a.returncode, 0, a.stdout)
        self.assertIn("This job stopped taking runs.", a.stderr)
        self.assertEqual(a.stdout.count(": starting"), 2, a.stdout)  # seeds 1 and 3, one per group
        runs = os.listdir(os.path.join(out, "shared", "runs"))
        self.assertEqual(len([r for r in runs if r.endswith(".h5")]), 3, runs)
        self.assertFalse([r for r in runs if ".claim" in r], runs)

    def test_a_failing_rank_aborts_the_job_and_finished_runs_are_kept(self):
        out = os.path.join(self.tmp, "fail")
        env = dict(ENV, DPSTUDY_TEST_FAIL_AT="step:60", DPSTUDY_TEST_FAIL_RANK="1")
        r, seconds = self.study(out, 2, "--workers", "2", "--seeds", "4", "--procs_per_run", "1", "--placement", "static",
                                env=env)
        self.assertNotEqual(r.returncode, 0)
        self.assertLess(seconds, 120)
        self.assertRegex(r.stderr, r"error: rank 1 on \S+, run [0-9a-f]{16}: injected failure")
        # Rank 1 failed in its second run (48 steps a run); every run that finished is kept, complete.
        runs = [f for f in os.listdir(os.path.join(out, "s", "runs")) if f.endswith(".h5") and ".ckpt." not in f]
        self.assertGreaterEqual(len(runs), 1)
        for name in runs:
            with h5py.File(os.path.join(out, "s", "runs", name), "r") as f:
                self.assertEqual(f["summary"].attrs["status"], "completed")
        # Resumed, the study completes; then it equals an uninterrupted one.
        r, _ = self.study(out, 2, "--workers", "2", "--seeds", "4", "--procs_per_run", "1")
        self.assertEqual(r.returncode, 0, r.stderr)
        ref = os.path.join(self.tmp, "fail-ref")
        self.assertEqual(self.study(ref, 0, "--workers", "2", "--seeds", "4")[0].returncode, 0)
        assert_same_study(self, os.path.join(ref, "s"), os.path.join(out, "s"))


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], *sys.argv[4:]], verbosity=2)
