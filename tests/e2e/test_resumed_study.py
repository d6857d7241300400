#!/usr/bin/env python3
"""A study resumed, or shared by jobs, on other data files or with other builds
of LibTorch, the BLAS or dpstudy: refused, or warned of and recorded.

usage: test_resumed_study.py WORKLOAD_EXE DPSTUDY_DATA DPSTUDY_ANALYZE [TEST...] (results_fixture.py)
"""
import glob
import os
import re
import subprocess
import sys
import unittest

import h5py

from e2e_support import PLAINEST_ATEN, make_fixtures, start_until
from results_fixture import DATA_TOOL, EXE, Results


class ResumedStudy(Results):
    def test_a_study_resumed_on_other_data_files_is_refused(self):
        # Runs trained on other files (a regenerated or replaced dataset, another
        # machine's copy) were pooled with the study's finished runs silently.
        out = os.path.join(self.tmp, "other-data")
        self.assertEqual(self.run_study("--workers", "1,2", output=out).returncode, 0)
        other = make_fixtures(DATA_TOOL, os.path.join(self.tmp, "other-fixtures"), 240, 50)
        runs = os.path.join(out, "mlp-mnist", "runs")
        before = sorted(os.listdir(runs))
        r = self.run_study("--workers", "1,2,4", output=out, data_dir=other)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertRegex(r.stderr, r"2 complete run\(s\) of this study were trained on other data files than those "
                                   r"found now, e\.g\. \S+\.h5: mnist/t10k-images-idx3-ubyte \(sha256=[0-9a-f]{12}\.\.\. "
                                   r"then, sha256=[0-9a-f]{12}\.\.\. now\), .*give the study another --name")
        self.assertEqual(sorted(os.listdir(runs)), before)  # nothing trained
        r = self.run_study("--workers", "1,2,4", "--dry_run", output=out, data_dir=other)  # dpstudy-slurm's check
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("2 complete run(s) of this study were trained on other data files", r.stderr)
        # The same files again: the study goes on; --force trains every run again on the new ones.
        r = self.run_study("--workers", "1,2,4", output=out)
        self.assertEqual((r.returncode, r.stdout.count(": starting")), (0, 1), r.stdout + r.stderr)
        r = self.run_study("--workers", "1,2,4", "--force", output=out, data_dir=other)
        self.assertEqual((r.returncode, r.stdout.count(": starting")), (0, 3), r.stdout + r.stderr)
        # A checkpoint made on other files is not resumed: the run starts over on those found now.
        stopped = os.path.join(self.tmp, "other-data-stopped")
        env = dict(os.environ, DPSTUDY_TEST_KILL_AT="step:5", DPSTUDY_TEST_KILL_SIGNAL="TERM")
        r = self.run_study("--checkpoint_steps", "1", output=stopped, env=env)
        self.assertEqual(r.returncode, 5, r.stdout + r.stderr)
        r = self.run_study(output=stopped, data_dir=other)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"checkpoint unusable \(\S+\.ckpt\.h5: was made on other data files: "
                                   r"mnist/t10k-images-idx3-ubyte \(sha256=.*\); starting over")

    def test_a_study_resumed_with_another_libtorch_or_blas_is_warned_of(self):
        # Runs of another stack (an upgraded Spack environment, another node type's
        # BLAS kernels) answer the same question but do not share bits: warned, not refused.
        out = os.path.join(self.tmp, "other-stack")
        self.assertEqual(self.run_study("--workers", "1,2", "--quiet", output=out).returncode, 0)
        r = self.run_study("--workers", "1,2,4", "--dry_run", output=out)
        self.assertNotIn("# warning", r.stdout)  # the same build: nothing to say
        runs = sorted(glob.glob(os.path.join(out, "mlp-mnist", "runs", "*.h5")))
        # ATen's CPU kernels forced to the plainest (as on an older CPU): other bits, warned of.
        with h5py.File(runs[0], "r") as f:
            kernels = f["provenance"].attrs["cpu_kernels"]
        r = self.run_study("--workers", "1,2,4", "--dry_run", output=out,
                           env=dict(os.environ, ATEN_CPU_CAPABILITY="default"))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        if not re.match(PLAINEST_ATEN, kernels):
            self.assertRegex(r.stdout, r"# warning: 2 of the 2 complete runs were made with other CPU kernels "
                                       r"\(LibTorch .*, " + re.escape(kernels) + r".*\) than this process's "
                                       r"\(LibTorch .*, " + PLAINEST_ATEN + r".*\): runs trained now will not")
        with h5py.File(runs[0], "r+") as f:  # as if made by an older LibTorch
            f["provenance"].attrs["libtorch"] = "1.0.0"
            del f["provenance"].attrs["text_crc32"]  # edited texts: their checksum goes (else: a damaged file)
        with h5py.File(runs[1], "r+") as f:  # as if made on a node whose OpenBLAS chose other kernels
            build = f["provenance"].attrs["blas_build"]
            if build == "-":
                self.skipTest("this BLAS has no version string")
            f["provenance"].attrs["blas_build"] = build + " (elsewhere)"
            del f["provenance"].attrs["text_crc32"]
        # What differs is said: each file differs in one part, the warning names both.
        warning = (r"# warning: 2 of the 2 complete runs were made with another LibTorch or with another BLAS build "
                   r"\(LibTorch "
                   r"(1\.0\.0, |.*\(elsewhere\), and others).*\) than this process's \(LibTorch [0-9.]+, .*\): runs "
                   r"trained now will not reproduce theirs bit for bit")
        r = self.run_study("--workers", "1,2,4", "--dry_run", output=out)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout, warning)
        r = self.run_study("--workers", "1,2,4", "--quiet", output=out)  # shown under --quiet too, then trained
        self.assertEqual((r.returncode, len(os.listdir(os.path.join(out, "mlp-mnist", "runs")))), (0, 3),
                         r.stdout + r.stderr)
        self.assertRegex(r.stdout, warning)
        # A run trained on a GPU (another model's kernels, CUDA and cuDNN): named with it.
        third = (set(glob.glob(os.path.join(out, "mlp-mnist", "runs", "*.h5"))) - set(runs)).pop()
        gpu = "NVIDIA H200, compute 9.0, CUDA 13.0, cuDNN 9.19.0"
        with h5py.File(third, "r+") as f:
            f["provenance"].attrs["gpu"] = gpu
            del f["provenance"].attrs["text_crc32"]
        r = self.run_study("--workers", "1,2,4", "--dry_run", output=out)
        self.assertRegex(r.stdout, r"# warning: 3 of the 3 complete runs were made with another LibTorch or with "
                                   r"another BLAS build or on a GPU \(.*\) than this process's \(LibTorch [0-9.]+, ")
        self.assertNotIn("GPU none", r.stdout)  # (the most common other stack is named: here LibTorch 1.0.0's)

    def test_a_study_resumed_with_another_build_of_dpstudy_is_warned_of(self):
        # Edited code (committed or not) or another version may train otherwise: the
        # finished runs' provenance names the build, compared where both tell.
        out = os.path.join(self.tmp, "other-build")
        self.assertEqual(self.run_study("--workers", "1,2,4,8", "--quiet", output=out).returncode, 0)
        runs = sorted(glob.glob(os.path.join(out, "mlp-mnist", "runs", "*.h5")))
        edits = [{"dpstudy_version": "0.0.9"}, {"git_changes": "-"}]  # "-": a file from before git_changes
        with h5py.File(runs[0], "r") as f:
            prov = f["provenance"].attrs
            version, commit, changes = prov["dpstudy_version"], prov["git_commit"], prov["git_changes"]
        if commit != "unknown":  # this build was made in a git checkout: two runs of other changes to its commit
            edits += [{"git_changes": "uncommitted 0123456789ab"}] * 2
        for run, edit in zip(runs, edits):
            with h5py.File(run, "r+") as f:
                for key, value in edit.items():
                    if value == "-":
                        del f["provenance"].attrs[key]
                    else:
                        f["provenance"].attrs[key] = value
                del f["provenance"].attrs["text_crc32"]  # edited texts: their checksum goes (else: a damaged file)
        r = self.run_study("--workers", "1,2,4,8", "--dry_run", output=out)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        this = commit[:12] + (" with uncommitted changes" + changes[len("uncommitted"):]
                              if changes.startswith("uncommitted") else "")
        # The most common other build named; not the file that lacks git_changes.
        if len(edits) == 4:
            told, named = 3, f"dpstudy {version}, commit {commit[:12]} with uncommitted changes 0123456789ab, and others"
        else:
            told, named = 1, f"dpstudy 0.0.9, commit {this}"
        self.assertIn(f"# warning: {told} of the 4 complete runs were made by another build of dpstudy ({named}) "
                      f"than this process's (dpstudy {version}, commit {this}): if the code that trains changed, runs "
                      "trained now differ from theirs", r.stdout)

    def test_jobs_sharing_a_study_on_other_copies_of_the_data_are_told(self):
        # Two jobs started at once on one study, each with its own copy (node-local
        # scratch): a job refuses the study if the other's runs are complete when it
        # starts; one that sees them finish meanwhile fails (exit 2), at the latest
        # at its end. A study left with runs of both copies is never a success.
        out = os.path.join(self.tmp, "two-copies")
        other = make_fixtures(DATA_TOOL, os.path.join(self.tmp, "two-copies-fixtures"), 240, 50)
        jobs = [subprocess.Popen([EXE, "--data_dir", data, "--dataset", "mnist", "--batch_size", "10", "--epochs", "1",
                                  "--output", out, "--threads", "1", "--seeds", "6", "--name", "shared"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for data in (self.data, other)]
        logs = [j.communicate(timeout=300) + (j.returncode,) for j in jobs]
        for _, err, rc in logs:
            self.assertIn(rc, (0, 2), err)
        digests = set()
        for name in os.listdir(os.path.join(out, "shared", "runs")):
            if name.endswith(".h5"):
                with h5py.File(os.path.join(out, "shared", "runs", name), "r") as f:
                    digests.add(f["provenance"].attrs["dataset_checksums"])
        refused = [e for _, e, rc in logs if rc == 2 and "were trained on other data files than those found now" in e]
        told = [e for _, e, rc in logs if rc == 2 and "run(s) of this study were trained on other data files than "
                "this job's (another job's copy, finished while this one ran)" in e]
        self.assertTrue(refused or told, logs)
        if len(digests) > 1:
            self.assertTrue(told, logs)

    def test_a_job_stops_taking_runs_once_another_finishes_one_on_other_files(self):
        # Job B trains seed 2 alone on its copy; job A, started meanwhile on the
        # whole study with another copy and slower runs, finds seed 2 finished on
        # other files after its first run, and takes no more.
        out = os.path.join(self.tmp, "midway")
        # B's run outlasts A's start, even on a busy machine (A's look must find it
        # unfinished); A's runs outlast B's.
        data_b = make_fixtures(DATA_TOOL, os.path.join(self.tmp, "midway-fixtures-b"), 400, 50)
        slow = make_fixtures(DATA_TOOL, os.path.join(self.tmp, "midway-fixtures-a"), 1600, 50)
        common = ["--dataset", "mnist", "--batch_size", "10", "--epochs", "30", "--threads", "1", "--output", out,
                  "--name", "shared"]
        # B holds its claim and trains: A's look finds nothing complete.
        b = start_until([EXE, "--data_dir", data_b, "--seed", "2", *common], "starting")
        a = subprocess.run([EXE, "--data_dir", slow, "--seeds", "4", *common], capture_output=True, text=True,
                           timeout=300)
        _, b_err = b.communicate(timeout=300)
        self.assertEqual(b.returncode, 0, b_err)
        self.assertEqual(a.returncode, 2, a.stdout + a.stderr)
        self.assertIn("This job stopped taking runs.", a.stderr)
        self.assertIn("this job stopped taking runs (another job's runs were trained on other data files", a.stdout)
        self.assertEqual(a.stdout.count(": starting"), 1, a.stdout)
        runs = sorted(os.listdir(os.path.join(out, "shared", "runs")))
        self.assertEqual(len([r for r in runs if r.endswith(".h5")]), 2, runs)
        self.assertFalse([r for r in runs if ".claim" in r], runs)
        with open(os.path.join(out, "shared", "log.txt")) as f:
            self.assertIn("# error: ", f.read())

if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], *sys.argv[4:]], verbosity=2)
