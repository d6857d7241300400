#!/usr/bin/env python3
"""Kill a study with SIGKILL at several points, resume it each time, and check
that nothing is corrupt, no finished run is redone, and the final index and
every run's metrics equal, bit for bit, those of an uninterrupted study.

usage: test_kill_resume.py WORKLOAD_EXE DPSTUDY_DATA
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import h5py
import numpy as np

EXE, DATA_TOOL = sys.argv[1], sys.argv[2]
FIXTURES = None  # made in the test's folder
# Columns and attributes that measure time or describe the invocation: not metrics.
NOT_METRICS = {"time_s", "comm_s", "wall_time_s", "samples_per_s", "started_utc", "finished_utc", "updated_utc"}


def study(output, *extra, kill=None):
    env = dict(os.environ)
    env.pop("DPSTUDY_TEST_KILL_AT", None)
    if kill:
        env["DPSTUDY_TEST_KILL_AT"] = kill
    cmd = [EXE, "--data_dir", FIXTURES, "--dataset", "mnist", "--name", "kill", "--output", output,
           "--workers", "2", "--batch_size", "10", "--epochs", "2", "--sync_period", "1,4", "--seeds", "2",
           "--eval_every", "10", "--checkpoint_steps", "10", "--threads", "1", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)


def as_bytes(value):
    a = np.asarray(value)
    if a.dtype.kind == "O":  # variable-length strings: compare the text, not the pointers
        return b"\0".join(x if isinstance(x, bytes) else str(x).encode() for x in a.ravel())
    return a.tobytes()


def metrics(path):
    """Every dataset and attribute of an HDF5 file that is a metric, as bytes."""
    out = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            if name.startswith("provenance") or name.split("/")[-1] in NOT_METRICS:
                return
            if isinstance(obj, h5py.Dataset):
                out[name] = as_bytes(obj[()])
            for k, v in obj.attrs.items():
                if k not in NOT_METRICS:
                    out[name + "@" + k] = as_bytes(v)
        f["/"].visititems(visit)
        for k, v in f.attrs.items():
            if k not in NOT_METRICS:
                out["@" + k] = as_bytes(v)
    return out


class KillAndResume(unittest.TestCase):
    def test_killed_study_resumes_to_the_uninterrupted_result(self):
        global FIXTURES
        tmp = tempfile.mkdtemp(prefix="dpstudy-kill-test-")
        try:
            FIXTURES = os.path.join(tmp, "data")
            subprocess.run([DATA_TOOL, "make-fixtures", FIXTURES, "--train", "600", "--test", "100"],
                           check=True, stdout=subprocess.DEVNULL)
            reference = os.path.join(tmp, "reference")
            r = study(reference)
            self.assertEqual(r.returncode, 0, r.stderr)

            killed = os.path.join(tmp, "killed")
            logs = []
            for point in ("step:25", "checkpoint-write:2", "run-write:2", "index-write:3"):
                r = study(killed, kill=point)
                logs.append((point, r.stdout))
                self.assertEqual(r.returncode, -9, f"{point}: not killed\n{r.stdout}\n{r.stderr}")
                self.assertIn("DPSTUDY_TEST_KILL_AT: killing this process at " + point, r.stderr)
            r = study(killed)
            logs.append(("final", r.stdout))
            self.assertEqual(r.returncode, 0, r.stderr)

            # Resumed from checkpoints, and no finished run redone.
            everything = "\n".join(out for _, out in logs)
            self.assertRegex(everything, r"resuming from its checkpoint at step 20")
            finished = set()
            for point, out in logs:
                for line in out.splitlines():
                    m = re.search(r"\] ([0-9a-f]{16}) .*: (starting|completed)", line)
                    if not m:
                        continue
                    run, what = m.groups()
                    if what == "starting":
                        self.assertNotIn(run, finished, f"{run} redone after it finished ({point})")
                    else:
                        finished.add(run)
            self.assertEqual(len(finished), 4)

            # Nothing corrupt or left over; everything equal to the reference.
            runs = sorted(os.listdir(os.path.join(killed, "kill", "runs")))
            self.assertEqual(runs, sorted(os.listdir(os.path.join(reference, "kill", "runs"))))
            self.assertEqual(len(runs), 4, runs)
            for name in runs + ["../index.h5"]:
                a = metrics(os.path.join(reference, "kill", "runs", name))
                b = metrics(os.path.join(killed, "kill", "runs", name))
                self.assertEqual(sorted(a), sorted(b), name)
                for key in a:
                    self.assertEqual(a[key], b[key], f"{name}: {key} differs")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
