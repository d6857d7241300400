#!/usr/bin/env python3
"""Jobs sharing a study under mpirun: each run once among them, whether groups of
processes take runs as they become free (dynamic placement) or as placed in
advance, with the bits of one process. And a rank that fails, or reads other
data, ends the whole job quickly, keeping every finished run.

usage: test_mpi_jobs.py WORKLOAD_EXE DPSTUDY_DATA MPIEXEC [TEST...] (mpi_fixture.py)
"""
import glob
import os
import re
import subprocess
import sys
import time
import unittest

import h5py

from e2e_support import MPI_ENV, PLAINEST_ATEN, make_fixtures, start_until
from h5compare import assert_same_study
from mpi_fixture import DATA_TOOL, EXE, MPIEXEC, SMALL, MpiStudies


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
            cmd = [MPIEXEC, "-n", "2", EXE, "--data_dir", self.data, "--dataset", "mnist",
                   "--batch_size", "10", "--epochs", "2", "--eval_every", "7", "--output", out, "--name", "s",
                   "--threads", "1", *args]
            job = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=MPI_ENV)
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
        self.assertRegex(r.stdout, r"# schedule: .*\n# order: 2 rounds, .* among the runs of a size, .*\n.*\n"
                                   r" +\d+ +[0-9a-f]{16} +0,1,2,3 +0 +240\n")
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
        self.assertIn("placed in advance, round by round, largest estimated cost first (its runs' processes per run "
                      "do not nest", r.stdout)
        r = plan(3, *args, "--procs_per_run", "2")
        self.assertIn("placed in advance, round by round, largest estimated cost first (the processes per run do "
                      "not divide the processes)", r.stdout)
        # A run the planned job cannot hold is refused before it queues.
        r, _ = self.study(os.path.join(self.tmp, "dyn-plan"), 0, *args, "--procs_per_run", "2", "--dry_run",
                          "--dry_run_processes", "1")
        self.assertEqual(r.returncode, 2, r.stdout)
        self.assertIn("--procs_per_run: '2' must divide workers (2) and be at most the 1 processes of the job",
                      r.stderr)

    def test_a_failing_rank_aborts_a_dynamically_placed_job(self):
        out = os.path.join(self.tmp, "fail-dyn")
        env = dict(MPI_ENV, DPSTUDY_TEST_FAIL_AT="step:30", DPSTUDY_TEST_FAIL_RANK="1")
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
        failing = dict(MPI_ENV, DPSTUDY_TEST_FAIL_AT="index-write:3", DPSTUDY_TEST_FAIL_RANK="0")
        r, _ = self.study(out, 2, *args, env=failing)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertEqual(r.stderr.count("error:"), 1, r.stderr)
        self.assertIn("dpstudy-mlp-mnist: error: injected failure (DPSTUDY_TEST_FAIL_AT=index-write:3)", r.stderr)
        self.assertNotIn("MPI_ABORT", r.stderr)
        self.assertEqual(len(glob.glob(os.path.join(out, "s", "runs", "*.h5"))), 2)
        r, _ = self.study(out, 2, *args)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        # So is --version (and --help): once.
        r = subprocess.run([MPIEXEC, "-n", "2", EXE, "--version"], capture_output=True, text=True, env=MPI_ENV,
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
                            "--epochs", "1"], capture_output=True, text=True, env=MPI_ENV, timeout=120)
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
        cmd = [MPIEXEC, "-n", "3", "sh", "-c",
               f'if [ {rank} = 1 ]; then D="$1"; else D="$2"; fi; shift 2; exec "$@" --data_dir "$D"', "sh",
               missing, self.data, EXE, "--dataset", "mnist", "--batch_size", "10", "--epochs", "1", "--output",
               out, "--threads", "1", "--quiet"]
        r = subprocess.run(cmd, capture_output=True, text=True, env=MPI_ENV, timeout=120)
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
        r = subprocess.run(cmd, capture_output=True, text=True, env=MPI_ENV, timeout=120)
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
        r = subprocess.run(cmd, capture_output=True, text=True, env=MPI_ENV, timeout=120)
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
        r = subprocess.run(cmd, capture_output=True, text=True, env=MPI_ENV, timeout=300)
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
        b = start_until([EXE, "--data_dir", data_b, "--seed", "2", *common], "starting", env=MPI_ENV)
        a = subprocess.run([MPIEXEC, "-n", "2", EXE, "--data_dir", slow, "--seeds", "6", *common],
                           capture_output=True, text=True, env=MPI_ENV, timeout=600)
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
        env = dict(MPI_ENV, DPSTUDY_TEST_FAIL_AT="step:60", DPSTUDY_TEST_FAIL_RANK="1")
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
