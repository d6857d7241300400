"""What the MPI tests share: generated data, and studies under mpirun or in one process.

Each file runs as test_mpi_X.py WORKLOAD_EXE DPSTUDY_DATA MPIEXEC [TEST...]: WORKLOAD_EXE
is the MLP workload, DPSTUDY_DATA the tool that writes the fixture data, MPIEXEC the MPI
launcher. test_mpi_layouts.py (CTest mpi_layouts) and test_mpi_jobs.py (mpi_jobs) run side
by side.
"""
import os
import subprocess
import sys
import time

from e2e_support import MPI_ENV, TempFolderTest, make_fixtures, mpi_launch
from h5compare import assert_same_study

EXE, DATA_TOOL, MPIEXEC = sys.argv[1], sys.argv[2], sys.argv[3]
# A small MLP (51k parameters, not 670k) where a test is about placement, failures
# or checkpoints, not the averaging of a model-sized buffer: each study takes half
# the time. The default model's layouts are checked in the power-of-two test.
SMALL = ["--hidden", "64"]


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
        cmd = mpi_launch(MPIEXEC, procs) + cmd
        started = time.monotonic()
        r = subprocess.run(cmd, capture_output=True, text=True, env=env or MPI_ENV, timeout=600)
        return r, time.monotonic() - started

    def same_as_one_process(self, out, args):
        """The study in `out` equals, bit for bit, the same study (`args`) in one process."""
        ref = out + "-ref"
        self.assertEqual(self.study(ref, 0, *args)[0].returncode, 0)
        assert_same_study(self, os.path.join(ref, "s"), os.path.join(out, "s"))

    def side_by_side(self, output, procs_per_job, args):
        """Jobs started at once on one study (0: no mpirun); their logs, after each exited 0."""
        def cmd(procs):
            return mpi_launch(MPIEXEC, procs) + [
                EXE, "--data_dir", self.data, "--dataset", "mnist", "--batch_size", "10", "--epochs", "2",
                "--eval_every", "7", "--output", output, "--name", "s", "--threads", "1", *args]
        jobs = [subprocess.Popen(cmd(p), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=MPI_ENV)
                for p in procs_per_job]
        logs = [j.communicate(timeout=600)[0] for j in jobs]
        for j, log in zip(jobs, logs):
            self.assertEqual(j.returncode, 0, log)
        return logs
