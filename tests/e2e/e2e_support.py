"""What the e2e tests share: a temporary folder per test class, generated dataset
files in it, and the environment mpirun needs as root."""
import os
import shutil
import subprocess
import tempfile
import unittest

# Open MPI refuses to run as root without these (this project's machines and CI are root).
# A waiting rank yields its core: under `ctest -j2` another test runs beside each
# job, and Open MPI's busy polling (its default where a job alone fills the cores)
# took the cores from it (the default suite: 639 s, 600 s yielding).
# More processes than cores: Open MPI 4 and 5 (PRRTE) refuse them unless a variable
# allows it. Variables, not a --oversubscribe flag: MPICH's mpiexec refuses the flag,
# and ignores the variables, as other MPIs do.
MPI_VARS = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMPI_MCA_mpi_yield_when_idle": "1",
            "OMPI_MCA_rmaps_base_oversubscribe": "1", "PRTE_MCA_rmaps_default_mapping_policy": ":oversubscribe"}
MPI_ENV = dict(os.environ, **MPI_VARS)


def mpi_launch(mpiexec, procs):
    """The words that start a command on `procs` processes, in MPI_ENV; none for 0 (one process,
    no launcher). Only the standard's `-n`: the tests run under any MPI's mpiexec."""
    return [mpiexec, "-n", str(procs)] if procs else []

# ATen's plainest CPU kernels (ATEN_CPU_CAPABILITY=default) as LibTorch names them in
# `cpu_kernels`: "NO AVX" in 1.13 and 2.6, "DEFAULT" in 2.11 (seen on the GPU machine).
PLAINEST_ATEN = r"ATen (?:NO AVX|DEFAULT)"


def need_gnuplot(test):
    """Skips the rest of `test` where gnuplot, which draws dpstudy-analyze's figures (Spack's
    +plots; tools/install-deps installs it), is not on the PATH, unless DPSTUDY_TESTS_NEED_GNUPLOT=1
    (CI) asks that its absence fail the test."""
    if shutil.which("gnuplot") is None and os.environ.get("DPSTUDY_TESTS_NEED_GNUPLOT") != "1":
        test.skipTest("gnuplot is not on the PATH: dpstudy-analyze draws no figure here "
                      "(apt-get install gnuplot-nox, or spack install dpstudy +plots)")


def start_until(cmd, marker, env=None):
    """Starts `cmd` and returns its Popen once its stdout has printed a line holding `marker`."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    seen = ""
    while marker not in seen:
        line = p.stdout.readline()
        if not line:
            raise AssertionError(f"{cmd[0]} ended before printing {marker!r}:\n{seen}{p.communicate()[1]}")
        seen += line
    return p


def make_fixtures(data_tool, folder, train, test):
    """Small valid MNIST, Fashion-MNIST and CIFAR-10 files in `folder` (dpstudy-data make-fixtures); returns it."""
    subprocess.run([data_tool, "make-fixtures", folder, "--train", str(train), "--test", str(test)], check=True,
                   stdout=subprocess.DEVNULL)
    return folder


class TempFolderTest(unittest.TestCase):
    """cls.tmp: a temporary folder for the whole class, removed after its last test."""
    prefix = "dpstudy-test-"

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix=cls.prefix)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)
