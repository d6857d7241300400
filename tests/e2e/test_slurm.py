#!/usr/bin/env python3
"""dpstudy-slurm: its checks before submission (always), and a study submitted
with its batch script to a real one-node Slurm cluster started in a temporary
folder (label slurm; skipped, exit 77, where slurm-wlm or munge is missing).

The cluster tests interrupt the job as the time limit would (the USR1 that
--signal=B:USR1@... sends), let it requeue itself and finish, and check that
the results equal, bit for bit, those of the same study under plain mpirun;
share a study among a job array; and scancel a job (its study stops at a
checkpoint and resumes).

The cluster tests also run the installed dpstudy-selftest --slurm, which
submits its checks through the installed dpstudy-slurm and waits for them.

usage: test_slurm.py input|cluster LAUNCHER WORKLOAD_EXE DPSTUDY_DATA [INSTALLED_SELFTEST]
"""
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

import h5py

from e2e_support import MPI_VARS
from h5compare import assert_same_study
import slurm_cluster

MODE, LAUNCHER, EXE, DATA_TOOL = sys.argv[1:5]
SELFTEST = sys.argv[5] if len(sys.argv) > 5 else None
SKIP = 77

STUDY = """[study]
name = slurmtest
[data]
dataset = mnist
[sweep]
workers = 1, 2
seed = 1, 2
[optimizer]
lr = 0.05
batch_size = 10
epochs = {epochs}
"""


def launcher(*args, env=None, cwd=None):
    return subprocess.run([sys.executable, LAUNCHER, *args], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=120)


class Workspace(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="dpstudy-slurm-test-")
        self.data = os.path.join(self.tmp, "data")
        subprocess.run([DATA_TOOL, "make-fixtures", self.data, "--train", "400", "--test", "50"], check=True,
                       stdout=subprocess.DEVNULL)
        self.study = os.path.join(self.tmp, "slurmtest.ini")
        with open(self.study, "w") as f:
            f.write(STUDY.format(epochs=1))

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def longer_study_and_its_reference(self):
        """The study with runs long enough to interrupt, and its results in one process (the folder)."""
        with open(self.study, "w") as f:
            f.write(STUDY.format(epochs=20))
        reference = os.path.join(self.tmp, "reference")
        r = subprocess.run([EXE, "--study", self.study, "--output", reference, "--threads", "1", "--data_dir",
                            self.data, "--quiet"], capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return reference


class LauncherInput(Workspace):
    def test_writes_a_batch_script_that_runs_the_study_with_srun(self):
        r = launcher(self.study, "--workload", EXE, "--nodes", "2", "--tasks-per-node", "4", "--time", "02:00:00",
                     "--partition", "gpu", "--", "--data_dir", self.data, cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("# study slurmtest: 4 runs on 2 node(s) x 4 process(es)", r.stdout)
        results = os.path.join(self.tmp, "results", "slurmtest")
        with open(os.path.join(results, "slurm.sbatch")) as f:
            script = f.read()
        for line in ("#SBATCH --nodes=2", "#SBATCH --ntasks-per-node=4", "#SBATCH --time=02:00:00",
                     "#SBATCH --partition=gpu", "#SBATCH --requeue", "#SBATCH --signal=B:USR1@120",
                     f"#SBATCH --output={results}/slurm-%j.out", "trap requeue USR1"):
            self.assertIn(line, script)
        # The executable's path in shell quotes where it needs them (a build folder with a space in its path).
        self.assertRegex(script, r"srun --mpi=pmix --kill-on-bad-exit=1 --ntasks=8 .* "
                         + re.escape(shlex.quote(os.path.abspath(EXE)))
                         + r" --study .*slurmtest.ini --output results --threads 1 .*--data_dir")
        self.assertNotIn("--gpus-per-task", script)
        self.assertNotIn("--array", script)
        self.assertEqual(subprocess.run(["bash", "-n", os.path.join(results, "slurm.sbatch")]).returncode, 0)

    def test_a_job_array_shares_the_study(self):
        r = launcher(self.study, "--workload", EXE, "--array", "3", "--", "--data_dir", self.data, cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("# study slurmtest: 4 runs on 3 jobs of 1 node(s) x 1 process(es)", r.stdout)
        self.assertIn("1600 per process on the longest one (no run of this study has finished yet, so no measured "
                      "rate: run a few, then --dry_run again) (for one job alone; the 3 jobs of the array share the "
                      "runs)", r.stdout)
        with open(os.path.join(self.tmp, "results", "slurmtest", "slurm.sbatch")) as f:
            self.assertIn("#SBATCH --array=1-3", f.read())
        r = launcher(self.study, "--workload", EXE, "--array", "6", "--", "--data_dir", self.data, cwd=self.tmp)
        self.assertIn("--array 6: more jobs than the study's 4 runs", r.stderr)
        r = launcher(self.study, "--workload", EXE, "--array", "0", cwd=self.tmp)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--array 0: must be at least 1", r.stderr)
        # N%M: at most M at once (Slurm's throttle); Slurm's own range spelling is refused with what to give.
        r = launcher(self.study, "--workload", EXE, "--array", "3%2", "--", "--data_dir", self.data, cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(self.tmp, "results", "slurmtest", "slurm.sbatch")) as f:
            self.assertIn("#SBATCH --array=1-3%2\n", f.read())
        self.refused("--array '0-3%2': expected the number of jobs sharing the study, e.g. 4, or 4%2 for at most 2 "
                     "at once", "--workload", EXE, "--array", "0-3%2")
        self.refused("--array 3%4: the jobs at once (after %) must be 1 to 3", "--workload", EXE, "--array", "3%4")
        self.refused("--mpi '': expected one of srun's MPI plugin names", "--workload", EXE, "--mpi", "")
        self.refused("--mpi 'pmix v4': expected one of srun's MPI plugin names", "--workload", EXE, "--mpi", "pmix v4")

    def test_a_missing_study_file_is_refused_before_anything_is_written(self):
        r = launcher(os.path.join(self.tmp, "nope.ini"), "--workload", EXE, cwd=self.tmp)
        self.assertEqual(r.returncode, 2)
        self.assertIn("study file", r.stderr)
        self.assertIn("nope.ini' does not exist", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "results")))

    def test_a_bad_study_is_refused_with_the_workloads_message(self):
        with open(self.study, "a") as f:
            f.write("wrokers = 3\n")
        r = launcher(self.study, "--workload", EXE, "--", "--data_dir", self.data, cwd=self.tmp)
        self.assertEqual(r.returncode, 2)
        self.assertIn("the study does not check out", r.stderr)
        self.assertIn("wrokers", r.stderr)

    def test_gpus_on_a_cpu_build_are_refused(self):
        version = subprocess.run([EXE, "--version"], capture_output=True, text=True).stdout
        if "cuda on" in version:
            self.skipTest("this build has CUDA")
        r = launcher(self.study, "--workload", EXE, "--gpus-per-task", "1", cwd=self.tmp)
        self.assertEqual(r.returncode, 2)
        self.assertIn("was built without CUDA", r.stderr)

    def test_runs_sharing_a_gpu_and_mps(self):
        # G GPUs per node, N runs at once on each: N x G processes per node, each taking the GPU of
        # its local rank modulo G; --mps starts NVIDIA MPS on every node for them. Or --share threads:
        # G processes per node, each training N runs (or auto) in threads.
        self.refused("--runs-per-gpu and --gpus-per-node go together", "--workload", EXE, "--runs-per-gpu", "4")
        self.refused("--mps serves runs sharing a GPU", "--workload", EXE, "--mps")
        self.refused("--runs-per-gpu shares each node's GPUs among its processes; --gpus-per-task gives each "
                     "process its own", "--workload", EXE, "--runs-per-gpu", "2", "--gpus-per-node", "1",
                     "--gpus-per-task", "1")
        self.refused("--tasks-per-node 3: --runs-per-gpu 2 x --gpus-per-node 2 makes 4 processes per node",
                     "--workload", EXE, "--runs-per-gpu", "2", "--gpus-per-node", "2", "--tasks-per-node", "3")
        # Threads of one process per GPU (the workload's --runs_at_once): auto only so, and no MPS.
        self.refused("--runs-per-gpu auto sizes the runs of a process from a first run's memory: it needs --share "
                     "threads", "--workload", EXE, "--runs-per-gpu", "auto", "--gpus-per-node", "1")
        self.refused("--runs-per-gpu four: expected a number of runs, or auto", "--workload", EXE,
                     "--runs-per-gpu", "four", "--gpus-per-node", "1")
        self.refused("--share threads says how runs share a GPU: give --runs-per-gpu N", "--workload", EXE,
                     "--share", "threads")
        self.refused("with --share threads one process per GPU trains its runs on CUDA streams of its own: drop "
                     "--mps", "--workload", EXE, "--runs-per-gpu", "8", "--gpus-per-node", "1", "--share",
                     "threads", "--mps")
        self.refused("--tasks-per-node 2: --share threads makes one process per GPU, 4 processes per node",
                     "--workload", EXE, "--runs-per-gpu", "8", "--gpus-per-node", "4", "--share", "threads",
                     "--tasks-per-node", "2")
        threads = ["--workload", EXE, "--runs-per-gpu", "auto", "--gpus-per-node", "2", "--share", "threads", "--",
                   "--data_dir", self.data]
        args = ["--workload", EXE, "--runs-per-gpu", "4", "--gpus-per-node", "2", "--mps", "--", "--data_dir",
                self.data]
        version = subprocess.run([EXE, "--version"], capture_output=True, text=True).stdout
        if "cuda on" not in version:
            self.refused("--runs-per-gpu 4: " + os.path.basename(EXE) + " was built without CUDA", *args)
            self.refused("--runs-per-gpu auto: " + os.path.basename(EXE) + " was built without CUDA", *threads)
            return
        self.refused("--runs_at_once after --: the batch script sets it from --runs-per-gpu with --share threads",
                     *threads, "--runs_at_once", "2")
        script = self.packed_script(threads, 2, "# packing: as many runs as fit at once on each of the 2 GPU(s) of a "
                                    "node, in threads of one process per GPU (--runs_at_once auto)")
        for line in ("#SBATCH --gpus-per-node=2", "#SBATCH --ntasks-per-node=2", " --runs_at_once auto",
                     " --procs_per_run 1 ", " --device cuda"):
            self.assertIn(line, script)
        self.assertNotIn("mps", script)
        script = self.packed_script(args, 8, "# packing: 4 run(s) at once on each of the 2 GPU(s) of a node, 8 "
                                    "processes per node, with NVIDIA MPS")
        for line in ("#SBATCH --gpus-per-node=2", "#SBATCH --ntasks-per-node=8", "exec nvidia-cuda-mps-control -f",
                     'export CUDA_MPS_PIPE_DIRECTORY="/tmp/dpstudy-mps-$SLURM_JOB_ID/pipe"', " --device cuda",
                     " --procs_per_run 1 "):
            self.assertIn(line, script)
        self.assertNotIn("--gpus-per-task", script)

    def packed_script(self, args, processes, packing):
        """The launcher's batch script for `args`, after its lines said `processes` per node and `packing`."""
        r = launcher(self.study, *args, cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"x {processes} process(es)", r.stdout)
        self.assertIn(packing, r.stdout)
        with open(os.path.join(self.tmp, "results", "slurmtest", "slurm.sbatch")) as f:
            return f.read()

    def refused(self, message, *args):
        """The launcher, run on this workspace's study with `args`, exits 2 saying `message`."""
        r = launcher(self.study, *args, cwd=self.tmp)
        self.assertEqual(r.returncode, 2, f"{args}: {r.stderr}")
        self.assertIn(message, r.stderr)

    def test_unknown_options_and_bad_values(self):
        self.refused("unrecognized arguments: --tasks_per_node 2", "--workload", EXE, "--tasks_per_node", "2")
        self.refused("--time 'two hours': expected a Slurm time limit", "--workload", EXE, "--time", "two hours")
        self.refused("--requeue-before 70000: Slurm signals at most 65535 s", "--workload", EXE,
                     "--requeue-before", "70000")
        self.refused("no executable dpstudy-no-such-workload", "--workload", "no-such-workload")
        self.refused("--job-name 'it's \"x\"': cannot be written into an #SBATCH line", "--workload", EXE,
                     "--job-name", "it's \"x\"", "--", "--data_dir", self.data)
        # Folders it cannot write: a message naming them, not a Python traceback.
        blocked = os.path.join(self.tmp, "a-file")
        with open(blocked, "w") as f:
            f.write("not a folder\n")
        self.refused(f"{blocked}/slurmtest: cannot create the study's results folder (", "--workload", EXE,
                     "--output", blocked, "--", "--data_dir", self.data)
        self.refused(f"{self.tmp}: cannot write the batch script (Is a directory)", "--workload", EXE, "--script",
                     self.tmp, "--", "--data_dir", self.data)
        # A value with a space goes in quotes (the one-node cluster test submits one).
        r = launcher(self.study, "--workload", EXE, "--job-name", "my study", "--", "--data_dir", self.data,
                     cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(self.tmp, "results", "slurmtest", "slurm.sbatch")) as f:
            self.assertIn('#SBATCH --job-name="my study"\n', f.read())

    def test_the_jobs_own_workload_arguments_are_checked_before_it_queues(self):
        # An option the script sets, given again after --, made a job that failed at its start
        # ("option '--threads' cannot be specified more than once").
        for given, instead in ((["--threads", "2"], "--cpus-per-task"), (["--output=elsewhere"], "--output"),
                               (["--checkpoint_interval", "60"], "--checkpoint-interval"),
                               (["--device", "cuda"], "--gpus-per-task")):
            self.refused(f"{given[0].split('=')[0]} after --: the batch script sets it from {instead}",
                         "--workload", EXE, "--", "--data_dir", self.data, *given)
        # An abbreviation the workload takes for one of them is refused by its own parser.
        self.refused("option '--threads' cannot be specified more than once", "--workload", EXE, "--",
                     "--data_dir", self.data, "--thread", "2")
        # The launcher's own values go through the workload's checks too: a negative checkpoint interval
        # was written into the script unchecked.
        self.refused("--checkpoint_interval: '-3' must be a number of seconds >= 0", "--workload", EXE,
                     "--checkpoint-interval", "-3", "--", "--data_dir", self.data)
        # Except the thread count, which the workload checks against the cores of the node it runs on:
        # those of a compute node, not of this one.
        cpus = str(64 * (os.cpu_count() or 1))
        r = launcher(self.study, "--workload", EXE, "--cpus-per-task", cpus, "--", "--data_dir", self.data,
                     cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(self.tmp, "results", "slurmtest", "slurm.sbatch")) as f:
            self.assertIn(f"--threads {cpus} --checkpoint_interval 300", f.read())

    def test_the_study_is_planned_for_the_jobs_processes(self):
        # Planned for one process, a study of 2-process runs was refused ("at most the 1 processes of
        # the job"); planned for the job's 2 x 2, it is placed on them and its work per process shown.
        r = launcher(self.study, "--workload", EXE, "--nodes", "2", "--tasks-per-node", "2", "--",
                     "--data_dir", self.data, "--procs_per_run", "2", "--exclude", "workers=1", cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        # 2 runs of 400 samples, one per group of 2 processes: 400 / 2 each.
        self.assertIn("# estimated cost: 800 sample-gradients to compute, 200 per process on the longest one",
                      r.stdout)
        # A run larger than the job is refused before it queues, not when it starts.
        self.refused("--procs_per_run: '2' must divide workers (2) and be at most the 1 processes of the job",
                     "--workload", EXE, "--", "--data_dir", self.data, "--procs_per_run", "2", "--exclude",
                     "workers=1")

    def test_a_time_limit_shorter_than_a_checkpoint_interval_warns_without_the_stop_before_it(self):
        # The stop before the limit checkpoints every running run; without it
        # (--requeue-before 0) only the periodic checkpoints are left.
        args = ["--workload", EXE, "--time", "5:00", "--checkpoint-interval", "600"]
        r = launcher(self.study, *args, "--requeue-before", "0", "--", "--data_dir", self.data, cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("warning: --time 5:00 (300 s) is not longer than one checkpoint interval (600 s)", r.stderr)
        r = launcher(self.study, *args, "--", "--data_dir", self.data, cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("warning", r.stderr)
        # Slurm's D-HH[:MM] forms with 0 days (read as minutes and seconds before), and no limit at all.
        for limit, seconds in (("0-0:05", 300), ("0-1", None), ("0-0:20", None), ("UNLIMITED", None), ("0", None)):
            r = launcher(self.study, "--workload", EXE, "--time", limit, "--checkpoint-interval", "600",
                         "--requeue-before", "0", "--", "--data_dir", self.data, cwd=self.tmp)
            self.assertEqual(r.returncode, 0, r.stderr)
            if seconds:
                self.assertIn(f"warning: --time {limit} ({seconds} s) is not longer than one checkpoint", r.stderr)
            else:
                self.assertNotIn("warning", r.stderr, limit)
        r = launcher(self.study, "--workload", EXE, "--time", "0-12", "--requeue-before", "900", "--",
                     "--data_dir", self.data, cwd=self.tmp)
        self.assertNotIn("requeues at once", r.stderr)

    def test_the_studys_own_warnings_come_before_submission(self):
        # The workload's dry run warns of a key that changes nothing; the launcher said nothing of it.
        r = launcher(self.study, "--workload", EXE, "--", "--data_dir", self.data, "--optimizer", "sgd",
                     "--momentum", "0.5", cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("dpstudy-slurm: warning: the study: momentum changes nothing in any of the", r.stderr)


class OnOneNodeCluster(Workspace):
    def test_study_requeued_at_the_time_limit_finishes_with_the_mpirun_results(self):
        with open(self.study, "w") as f:
            f.write(STUDY.format(epochs=20))  # a few seconds per run: long enough to interrupt
        mpi_env = dict(os.environ, **MPI_VARS)
        reference = os.path.join(self.tmp, "reference")
        r = subprocess.run(["mpirun", "-np", "2", EXE, "--study", self.study, "--output", reference, "--threads",
                            "1", "--data_dir", self.data, "--quiet"], capture_output=True, text=True, env=mpi_env,
                           timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

        with slurm_cluster.Cluster(os.path.join(self.tmp, "cluster")) as cluster:
            env = dict(cluster.env, **MPI_VARS)
            # No periodic checkpoint: what resumes a run is the one its stop made.
            r = launcher(self.study, "--workload", EXE, "--tasks-per-node", "2", "--time", "10:00", "--submit",
                         "--", "--data_dir", self.data, env=env, cwd=self.tmp)
            self.assertEqual(r.returncode, 0, r.stderr)
            job = r.stdout.strip().splitlines()[-1]
            results = os.path.join(self.tmp, "results", "slurmtest")
            log = os.path.join(results, f"slurm-{job}.out")
            self.assertIn(f"log: {log}", r.stdout)

            # Interrupt once the first run has finished: the batch shell gets what
            # --signal=B:USR1@120 sends before the time limit.
            def finished_runs():
                try:
                    with open(log) as f:
                        return f.read().count(": completed, final test accuracy")
                except OSError:
                    return 0

            end = time.time() + 120
            while finished_runs() == 0 and time.time() < end:
                time.sleep(0.1)
            def context():
                try:
                    with open(log) as f:
                        return f"\n--- {log} ---\n" + f.read() + cluster.log_tail()
                except OSError:
                    return f"\n(no {log} yet)" + cluster.log_tail()

            self.assertEqual(cluster.job_state(job), "RUNNING",
                             "expected the job running with a run finished, to interrupt it" + context())
            cluster.run("scancel", "--signal=USR1", "--batch", job)
            end = time.time() + 60  # RUNNING, COMPLETING, then PENDING again
            while cluster.job_state(job) != "PENDING" and time.time() < end:
                time.sleep(0.1)
            self.assertEqual(cluster.job_state(job), "PENDING", "expected the job requeued" + context())
            # Slurm holds a requeued job back until the old job's credential has
            # expired (cred_expire, 120 s by default; 10 s in the test cluster):
            # starting it earlier fails it with "Job credential revoked".
            state = cluster.wait(job, timeout=300)
            with open(log) as f:
                text = f.read()
            self.assertEqual(state, "COMPLETED", text + cluster.log_tail())

        self.assertIn(f"job {job} restart 0 on", text)
        self.assertIn("time limit near: SIGUSR1 to the study", text)
        self.assertIn("# study slurmtest stopped by SIGUSR1: ", text)
        self.assertIn("study step ended with status 5", text)
        self.assertIn("time limit near: requeueing job", text)
        # Said before the requeue: Slurm may kill the batch script as soon as it asks for one.
        self.assertLess(text.index("study step ended with status 5"), text.index("time limit near: requeueing job"))
        stopped = re.search(r"stopped by SIGUSR1 at step (\d+) of", text)
        if stopped:  # the signal came within a run, not between two
            self.assertIn(f"resuming from its checkpoint at step {stopped.group(1)}", text)
        self.assertIn(f"job {job} restart 1 on", text)
        self.assertIn("study step ended with status 0", text)
        self.assertRegex(text, r"# study slurmtest: 4 runs, [1-3] already complete; .*; 2 process\(es\)")
        with h5py.File(os.path.join(results, "index.h5"), "r") as f:
            self.assertEqual(len(f["index"]["run_id"]), 4)
            self.assertEqual(set(f["index"]["status"].asstr()[()]), {"completed"})
        assert_same_study(self, os.path.join(reference, "slurmtest"), results)

    def test_scancel_stops_the_study_at_checkpoints_and_it_resumes(self):
        # scancel sends SIGTERM (SIGKILL after KillWait): the study checkpoints its
        # running run and stops; started again, it resumes to one process's bits.
        # The results folder has a space and a '#', which #SBATCH lines must escape, and a '%', which sbatch
        # would expand (%j: the job id) in the log's name.
        reference = self.longer_study_and_its_reference()
        output = os.path.join(self.tmp, "my results #2 %j")
        results = os.path.join(output, "slurmtest")
        with slurm_cluster.Cluster(os.path.join(self.tmp, "cluster")) as cluster:
            env = dict(cluster.env, **MPI_VARS)
            r = launcher(self.study, "--workload", EXE, "--tasks-per-node", "2", "--time", "10:00", "--submit",
                         "--output", output, "--", "--data_dir", self.data, env=env, cwd=self.tmp)
            self.assertEqual(r.returncode, 0, r.stderr)
            job = r.stdout.strip().splitlines()[-1]
            log = os.path.join(results, f"slurm-{job}.out")
            end = time.time() + 120
            def log_text():
                try:
                    with open(log) as f:
                        return f.read()
                except OSError:
                    return ""

            while "step 20/400" not in log_text() and time.time() < end:  # within a run
                time.sleep(0.05)
            cluster.run("scancel", job)
            state = cluster.wait(job, timeout=120)
            text = log_text()
            self.assertEqual(state, "CANCELLED", text + cluster.log_tail())
        self.assertIn("# study slurmtest stopped by SIGTERM: ", text)
        stopped = re.search(r"stopped by SIGTERM at step (\d+) of 400", text)
        self.assertTrue(stopped, text)
        runs = os.path.join(results, "runs")
        self.assertEqual(len([f for f in os.listdir(runs) if ".ckpt." in f]), 2, os.listdir(runs))
        r = subprocess.run(["mpirun", "-np", "2", EXE, "--study", self.study, "--output", os.path.dirname(results),
                            "--threads", "1", "--data_dir", self.data], capture_output=True, text=True,
                           env=dict(os.environ, **MPI_VARS), timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn(f"resuming from its checkpoint at step {stopped.group(1)}", r.stdout)
        assert_same_study(self, os.path.join(reference, "slurmtest"), results)

    def test_a_job_array_shares_the_study_each_run_once(self):
        reference = self.longer_study_and_its_reference()
        with slurm_cluster.Cluster(os.path.join(self.tmp, "cluster")) as cluster:
            # 2%2: the throttle's spelling through the real sbatch, both jobs still at once.
            r = launcher(self.study, "--workload", EXE, "--array", "2%2", "--time", "10:00", "--submit",
                         "--", "--data_dir", self.data, env=cluster.env, cwd=self.tmp)
            self.assertEqual(r.returncode, 0, r.stderr)
            job = r.stdout.strip().splitlines()[-1]
            end = time.time() + 300
            states = []
            while time.time() < end:  # every task of the array in a final state
                out = cluster.run("scontrol", "show", "job", job, check=False).stdout
                states = [w.split("=", 1)[1] for w in out.split() if w.startswith("JobState=")]
                if len(states) == 2 and all(st in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT") for st in states):
                    break
                time.sleep(0.5)
            results = os.path.join(self.tmp, "results", "slurmtest")
            logs = []
            for name in sorted(os.listdir(results)):
                if name.startswith("slurm-") and name.endswith(".out"):
                    with open(os.path.join(results, name)) as f:
                        logs.append(f.read())
            self.assertEqual(states, ["COMPLETED", "COMPLETED"], "\n".join(logs) + cluster.log_tail())
        self.assertEqual(len(logs), 2)
        self.assertEqual(sum(log.count(": starting") for log in logs), 4, "\n".join(logs))
        self.assertTrue(all(": starting" in log for log in logs), "both jobs took runs:\n" + "\n".join(logs))
        with h5py.File(os.path.join(results, "index.h5"), "r") as f:
            self.assertEqual(len(f["index"]["run_id"]), 4)
        assert_same_study(self, os.path.join(reference, "slurmtest"), results)

    def test_the_installed_selftest_validates_the_cluster_through_slurm(self):
        if SELFTEST is None:
            self.skipTest("no installed dpstudy-selftest given")
        work = os.path.join(self.tmp, "selftest")
        with slurm_cluster.Cluster(os.path.join(self.tmp, "cluster")) as cluster:
            r = subprocess.run([SELFTEST, "--slurm", "--workdir", work, "--slurm-timeout", "300"],
                               capture_output=True, text=True,
                               env=dict(cluster.env, **MPI_VARS), timeout=500)
            tail = cluster.log_tail()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr + tail)
        self.assertRegex(r.stdout, r"slurm +passed +[0-9.]+ +job [0-9]+: 2 runs on 2 tasks, identical to one "
                                   r"process here")
        self.assertRegex(r.stdout, r"# dpstudy-selftest: 7 passed, 0 failed, 1 skipped")
        logs = glob.glob(os.path.join(work, "results", "selftest-slurm", "slurm-*.out"))
        self.assertEqual(len(logs), 1, r.stdout)


if __name__ == "__main__":
    if MODE == "cluster":
        why = slurm_cluster.missing()
        if why:
            print(f"skipped: {why}")
            sys.exit(SKIP)
        suite = unittest.defaultTestLoader.loadTestsFromTestCase(OnOneNodeCluster)
    else:
        suite = unittest.defaultTestLoader.loadTestsFromTestCase(LauncherInput)
    sys.exit(0 if unittest.TextTestRunner(verbosity=2).run(suite).wasSuccessful() else 1)
