"""The fixture studies that the test_analyze_*.py files read, trained once per file.

Each file runs as test_analyze_X.py ANALYZE WORKLOAD_EXE DPSTUDY_DATA [SIMPLE_CNN_EXE]:
ANALYZE is dpstudy-analyze, WORKLOAD_EXE the MLP workload that trains the studies,
DPSTUDY_DATA the tool that writes the fixture data, SIMPLE_CNN_EXE a second workload.

The studies, in cls.tmp (tests copy one before they edit it):
- main: overlap 0, 0.5 x sync_period 1, 4 x lr 0.05, 1000, 3 seeds. lr 1000 diverges:
  a group of diverged runs only. overlap 0.5 is missing at sync_period 4.
- batch: batch_size 5, 10, 20, 2 seeds.
- periods: sync_period 1, never, 2 seeds.
"""
import os
import subprocess
import sys

from e2e_support import TempFolderTest, make_fixtures

ANALYZE, EXE, DATA_TOOL = sys.argv[1], sys.argv[2], sys.argv[3]
SIMPLE_CNN = sys.argv[4] if len(sys.argv) > 4 else ""


class AnalyzeTest(TempFolderTest):
    prefix = "dpstudy-analyze-test-"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        data = cls.data = make_fixtures(DATA_TOOL, os.path.join(cls.tmp, "data"), 200, 50)
        # On the CPU, also on a GPU node: tests edit the runs' gpu and cpu_kernels by hand.
        common = [EXE, "--data_dir", data, "--dataset", "mnist", "--epochs", "1", "--output", cls.tmp, "--quiet",
                  "--workers", "2", "--eval_every", "2", "--device", "cpu"]
        subprocess.run(common + ["--name", "main", "--batch_size", "10", "--overlap", "0,0.5", "--sync_period", "1,4",
                                 "--lr", "0.05,1000", "--seeds", "3", "--exclude", "overlap=0.5 & sync_period=4"],
                       check=True, stdout=subprocess.DEVNULL)
        subprocess.run(common + ["--name", "batch", "--batch_size", "5,10,20", "--seeds", "2"], check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run(common + ["--name", "periods", "--batch_size", "10", "--sync_period", "1,never", "--seeds", "2"],
                       check=True, stdout=subprocess.DEVNULL)
        cls.main = os.path.join(cls.tmp, "main")
        cls.batch = os.path.join(cls.tmp, "batch")
        cls.periods = os.path.join(cls.tmp, "periods")

    def analyze(self, *args, status=0):
        """dpstudy-analyze's standard output and error, after checking its exit status."""
        r = subprocess.run([ANALYZE, *args], capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, status, f"{args}: {r.stdout}\n{r.stderr}")
        return r.stdout + r.stderr
