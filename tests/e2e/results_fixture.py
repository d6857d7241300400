"""What the study_results tests share: generated data, and a study of the MLP run
with a few arguments added.

Each file runs as test_X.py WORKLOAD_EXE DPSTUDY_DATA DPSTUDY_ANALYZE [TEST...]:
WORKLOAD_EXE is the MLP workload, DPSTUDY_DATA the tool that writes the fixture
data, DPSTUDY_ANALYZE dpstudy-analyze. test_results.py, test_dry_run.py and
test_resumed_study.py run side by side.
"""
import os
import subprocess
import sys

from e2e_support import TempFolderTest, make_fixtures

EXE, DATA_TOOL, ANALYZE = sys.argv[1], sys.argv[2], sys.argv[3]


class Results(TempFolderTest):
    prefix = "dpstudy-results-test-"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.data = make_fixtures(DATA_TOOL, os.path.join(cls.tmp, "data"), 200, 50)

    def run_study(self, *args, output=None, study_text=None, env=None, data_dir=None):
        cmd = [EXE, "--data_dir", data_dir or self.data, "--dataset", "mnist", "--batch_size", "10", "--epochs", "1",
               "--output", output or os.path.join(self.tmp, "out"), "--threads", "1"]
        if study_text is not None:
            path = os.path.join(self.tmp, "study.ini")
            with open(path, "w") as f:
                f.write(study_text)
            cmd += ["--study", path]
        return subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=300, env=env)
