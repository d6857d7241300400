#!/usr/bin/env python3
"""--reproduce RUN_FILE: a run trained again from the config stored in its file,
compared bit for bit: identical in one process and under mpirun, with the
reference's thread count by default; a changed value is found and named (exit
4); a search trial keeps its run id; a model option (ResNet depth) comes back
too; a file of another version is reproduced with notes or refused; and what
cannot be a reproduction is refused (exit 2).

usage: test_reproduce.py MLP_EXE RESNET_EXE DPSTUDY_DATA [MPIEXEC]
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import unittest

import h5py
import numpy as np

from e2e_support import MPI_ENV, PLAINEST_ATEN, TempFolderTest, make_fixtures, mpi_launch

MLP, RESNET, DATA_TOOL = sys.argv[1], sys.argv[2], sys.argv[3]
MPIEXEC = sys.argv[4] if len(sys.argv) > 4 else ""


class Reproduce(TempFolderTest):
    prefix = "dpstudy-reproduce-test-"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.data = make_fixtures(DATA_TOOL, os.path.join(cls.tmp, "data"), 200, 50)
        # Two threads spread over each operation: the reproduction must take them from
        # the file (another count may change the bits).
        # On the CPU, also on a GPU machine: its reproductions must stay there.
        run = [MLP, "--dataset", "mnist", "--workers", "2", "--batch_size", "10", "--sync_period", "4",
               "--epochs", "2", "--eval_every", "5", "--threads", "2", "--output", cls.tmp, "--device", "cpu"]
        cls.exe(run + ["--name", "ref", "--parallel", "operations"])
        cls.reference = glob.glob(os.path.join(cls.tmp, "ref", "runs", "*.h5"))[0]
        # The two workers side by side on the two threads (auto): one thread's bits.
        cls.exe(run + ["--name", "ref-workers"])
        cls.reference_workers = glob.glob(os.path.join(cls.tmp, "ref-workers", "runs", "*.h5"))[0]

    @classmethod
    def exe(cls, cmd, status=0, mpi=0, env=None):
        cmd = [cmd[0], "--data_dir", cls.data, "--quiet", *cmd[1:]]
        cmd = mpi_launch(MPIEXEC, mpi) + cmd
        r = subprocess.run(cmd, capture_output=True, text=True, env=dict(MPI_ENV, **(env or {})), timeout=600)
        if r.returncode != status:
            raise AssertionError(f"{cmd}: exit {r.returncode}, expected {status}\n{r.stdout}\n{r.stderr}")
        return r.stdout + r.stderr

    def reproduce(self, exe, reference, *extra, status=0, mpi=0, env=None):
        return self.exe([exe, "--reproduce", reference, "--output", os.path.join(self.tmp, "again"), *extra],
                        status=status, mpi=mpi, env=env)

    def test_a_run_reproduces_bit_for_bit_with_its_threads(self):
        out = self.reproduce(MLP, self.reference)
        self.assertIn("threads           same: 2", out)
        self.assertIn("parallel          same: operations", out)
        self.assertRegex(out, r"\n  blas_build        same: \S")  # the BLAS's version and kernels, e.g. OpenBLAS's
        self.assertRegex(out, r"\n  gpu               same: \S")  # none on the CPU
        self.assertRegex(out, r"# reproduce: identical: all \d+ metric datasets and attributes of run [0-9a-f]{16} "
                              r"agree bit for bit")
        self.assertNotIn("# note:", out)
        run_id = os.path.basename(self.reference)[:-3]
        self.assertTrue(os.path.exists(os.path.join(self.tmp, "again", "reproduce-" + run_id, "runs",
                                                    run_id + ".h5")))

    def test_atens_other_cpu_kernels_change_the_bits_and_are_named(self):
        # LibTorch's own CPU kernels decide the bits as the BLAS build decides a product's: ATen's
        # vectorised level (a loss's sum, say), forced to the plainest, and the run differs
        # (within its first steps); the provenance says why.
        with h5py.File(self.reference_workers, "r") as f:
            kernels = f["provenance"].attrs["cpu_kernels"]
        if re.match(PLAINEST_ATEN, kernels):
            self.skipTest("ATen's plainest CPU kernels are already this CPU's")
        out = self.reproduce(MLP, self.reference_workers, status=4, env={"ATEN_CPU_CAPABILITY": "default"})
        self.assertRegex(out, r"\n  cpu_kernels       " + re.escape(kernels) + r" -> " + PLAINEST_ATEN +
                         r"(, oneDNN .*)?\n")
        self.assertRegex(out, r"train/loss: \d+ of \d+ values differ, the first at row \d+ \(step \d+\)")
        self.assertIn("# reproduce: DIFFERENT:", out)

    def test_onednns_other_instruction_set_changes_a_convolutions_bits_and_is_named(self):
        # oneDNN computes LibTorch's convolutions on the CPU with the instruction set it picks by
        # CPU kind; capped at SSE4.1, a ResNet's run differs, and the provenance says why.
        self.exe([RESNET, "--depth", "8", "--workers", "1", "--batch_size", "16", "--epochs", "1",
                  "--threads", "1", "--output", self.tmp, "--name", "resnet-kernels", "--device", "cpu"])
        (resnet,) = glob.glob(os.path.join(self.tmp, "resnet-kernels", "runs", "*.h5"))
        with h5py.File(resnet, "r") as f:
            kernels = f["provenance"].attrs["cpu_kernels"]
        told = re.search(r"oneDNN (\S+) (\S+)$", kernels)
        if not told or told.group(2) in ("sse41", "(instruction"):
            self.skipTest(f"oneDNN does not tell its instruction set here, or it is SSE4.1 already ({kernels})")
        capped = {"ONEDNN_MAX_CPU_ISA": "SSE41", "DNNL_MAX_CPU_ISA": "SSE41"}  # (DNNL_: oneDNN before 2.5)
        out = self.reproduce(RESNET, resnet, status=4, env=capped)
        self.assertRegex(out, r"\n  cpu_kernels       " + re.escape(kernels) + r" -> .*oneDNN " +
                         re.escape(told.group(1)) + r" sse41\n")
        self.assertIn("# reproduce: DIFFERENT:", out)

    def test_without_output_it_writes_under_results_and_compares(self):
        # The documented form. Without --output it trained the run as a single
        # run: no file, no comparison, exit 0.
        cwd = os.path.join(self.tmp, "here")
        os.makedirs(cwd)
        r = subprocess.run([MLP, "--reproduce", self.reference_workers, "--data_dir", self.data, "--quiet"],
                           capture_output=True, text=True, cwd=cwd, timeout=600)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("# reproduce: identical", r.stdout)
        run_id = os.path.basename(self.reference_workers)[:-3]
        self.assertTrue(os.path.exists(os.path.join(cwd, "results", "reproduce-" + run_id, "runs", run_id + ".h5")))

    def test_a_run_of_workers_side_by_side_reproduces_on_any_threads(self):
        out = self.reproduce(MLP, self.reference_workers, "--threads", "1")
        self.assertIn("threads           2 -> 1", out)
        self.assertIn("parallel          same: workers", out)
        self.assertIn("# reproduce: identical", out)

    def test_a_run_trains_again_on_its_references_kind_of_device(self):
        # The reference ran on the CPU: its reproduction does too, also on a GPU machine
        # (where --device auto would take the GPU, whose kernels give other bits).
        self.assertIn("device            same: cpu", self.reproduce(MLP, self.reference_workers))
        # A GPU's run (its provenance edited so): on a GPU again, or refused with the way on.
        gpu_run = os.path.join(self.tmp, "gpu-run.h5")
        shutil.copy(self.reference_workers, gpu_run)
        gpu = "NVIDIA H200, compute 9.0, CUDA 13.0, cuBLAS 13.1.0, cuDNN 9.19.0"
        with h5py.File(gpu_run, "r+") as f:
            f["provenance"].attrs["device"] = "cuda:0"
            f["provenance"].attrs["gpu"] = gpu
            del f["provenance"].attrs["text_crc32"]  # edited texts: their checksum goes (else: a damaged file)
        cmd = [MLP, "--reproduce", gpu_run, "--data_dir", self.data, "--output", os.path.join(self.tmp, "again"),
               "--quiet"]
        r = subprocess.run(cmd, capture_output=True, text=True, env=MPI_ENV, timeout=600)
        if r.returncode == 2:
            self.assertRegex(r.stderr, re.escape(f"--reproduce: {gpu_run}: the run trained on a GPU (cuda:0, {gpu}) "
                                                 "and ") +
                             r"(this dpstudy was built with DPSTUDY_WITH_CUDA=OFF|this LibTorch has no CUDA support "
                             r"or no GPU is visible): give --device cpu to train it again on the CPU, knowing that "
                             r"the CPU's bits differ \(DIFFERENT\)\n")
            self.assertNotIn("# run id", r.stdout)  # nothing trained
        else:  # a GPU here: trained on it, whose bits are not the CPU's the file holds
            self.assertEqual(r.returncode, 4, r.stdout + r.stderr)
            self.assertIn("device            same: cuda:0", r.stdout)
        # Asked for, the CPU: the reference's bits (it truly ran there), its device named.
        out = self.reproduce(MLP, gpu_run, "--device", "cpu")
        self.assertIn("device            cuda:0 -> cpu", out)
        self.assertIn("# reproduce: identical", out)

    @unittest.skipUnless(MPIEXEC, "built without MPI")
    def test_a_run_reproduces_under_mpirun(self):
        out = self.reproduce(MLP, self.reference, mpi=2)
        self.assertIn("processes         1 -> 2", out)
        self.assertIn("# reproduce: identical", out)

    @unittest.skipUnless(MPIEXEC, "built without MPI")
    def test_a_diverged_run_reproduces_under_mpirun_nan_included(self):
        # Its models' NaNs reach syncs/divergence through commutative sums that two processes order otherwise:
        # the NaN's payload bits differed (a fuzzed ResNet-8 run, reproduced on 4 processes, exit 4). Results
        # store the one quiet NaN, and --reproduce takes any NaN for any NaN (files written before).
        self.exe([RESNET, "--dataset", "cifar10", "--depth", "8", "--batch_norm", "0", "--workers", "4",
                  "--batch_size", "8", "--sync_period", "3", "--lr", "30", "--threads", "1",
                  "--output", self.tmp, "--name", "diverged"])
        reference = glob.glob(os.path.join(self.tmp, "diverged", "runs", "*.h5"))[0]
        out = self.reproduce(RESNET, reference, mpi=2)
        self.assertIn("# reproduce: identical", out)
        again = os.path.join(self.tmp, "again", "reproduce-" + os.path.basename(reference)[:-3], "runs",
                             os.path.basename(reference))
        with h5py.File(reference, "r") as f, h5py.File(again, "r") as g:
            self.assertEqual(f.attrs["status"], "diverged")
            divergence = f["syncs/divergence"][()]
            self.assertTrue(np.isnan(divergence).any(), divergence)
            self.assertEqual(divergence.tobytes(), g["syncs/divergence"][()].tobytes())
        older = os.path.join(self.tmp, "older-nan.h5")
        shutil.copy(reference, older)
        with h5py.File(older, "r+") as f:
            d = f["syncs/divergence"][()]
            d[np.isnan(d)] = np.frombuffer(np.uint64(0xFFF8000000000001).tobytes(), dtype=np.float64)[0]
            f["syncs/divergence"][...] = d
            del f["syncs/divergence"].attrs["crc32"]  # edited values: else a damaged file
        self.assertIn("# reproduce: identical", self.reproduce(RESNET, older))

    def test_a_changed_metric_is_found_and_named(self):
        changed = os.path.join(self.tmp, "changed.h5")
        shutil.copy(self.reference, changed)
        with h5py.File(changed, "r+") as f:
            accuracy = f["eval/test_accuracy"][()]
            accuracy[1] += 0.01
            f["eval/test_accuracy"][...] = accuracy
            del f["eval/test_accuracy"].attrs["crc32"]  # edited values: else a damaged file
            f["summary"].attrs["best_test_accuracy"] = 0.5
            loss = f["train/worker_loss"][()]  # [step, worker]
            loss[2, 1] += 0.25
            f["train/worker_loss"][...] = loss
            del f["train/worker_loss"].attrs["crc32"]
            eval_step, train_step = int(f["eval/step"][1]), int(f["train/step"][2])
        out = self.reproduce(MLP, changed, status=4)
        self.assertIn("# reproduce: DIFFERENT: 3 of", out)
        # Rows are named with their step (the group's step column): row 2 of train is step 3.
        self.assertEqual(train_step, 3)
        self.assertRegex(out, rf"eval/test_accuracy: 1 of \d+ values differ, the first at row 1 \(step {eval_step}\): ")
        self.assertRegex(out, r"train/worker_loss: 1 of \d+ values differ, the first at row 2 \(step 3\), column 1: ")
        self.assertIn("summary@best_test_accuracy: 0.5 in the reference", out)
        # Whole-number columns, the status, a column of another type or only in the reference,
        # and a group only in the reproduction (a newer dpstudy's) are told too (no test made one).
        with h5py.File(changed, "r+") as f:
            samples = f["train/samples"][()]
            samples[4] += 1
            f["train/samples"][...] = samples
            f.attrs["status"] = "diverged"
            # Edited values and texts: their checksums go (else: a damaged file, refused as one).
            del f["train/samples"].attrs["crc32"]
            del f.attrs["text_crc32"]
            f["train/extra"] = samples
            lr = f["train/lr"][()]
            del f["train/lr"]
            f["train/lr"] = [str(v).encode() for v in lr]
            del f["syncs"]
        out = self.reproduce(MLP, changed, status=4)
        self.assertRegex(out, r"train/samples: 1 of \d+ values differ, the first at row 4 \(step 5\): \d+ in the "
                              r"reference, \d+ reproduced")
        self.assertIn("#   status: 'diverged' in the reference, 'completed' reproduced", out)
        self.assertIn("#   train/extra: only in the reference", out)
        self.assertIn("#   train/lr: stored as another type", out)
        self.assertIn("# not compared, recorded only by the newer dpstudy: syncs", out)
        # A group of another version's in the reference is named, not passed over in silence
        # (the verdict said "identical: all N metric datasets" without it).
        shutil.copy(self.reference, changed)
        with h5py.File(changed, "r+") as f:
            f.create_group("later").attrs["metric"] = 1.0
        out = self.reproduce(MLP, changed)
        self.assertIn("# not compared, recorded only in the reference (by another dpstudy version; this one does not "
                      "record them): later", out)
        self.assertIn("# reproduce: identical:", out)

    def test_a_file_of_another_version_or_machine_reproduces_or_is_refused_with_why(self):
        # What another dpstudy version may have written: a file without an option newer than it
        # (the default is used and said so), a run id computed otherwise (said so; the comparison
        # holds), and a config key this version has no option for (refused: it cannot be trained
        # as stored).
        older, other_id, newer = (os.path.join(self.tmp, n + ".h5") for n in ("older", "other-id", "newer"))
        for path in (older, other_id, newer):
            shutil.copy(self.reference, path)
        with h5py.File(older, "r+") as f:
            del f["config"].attrs["eval_at_sync"]  # 0, its default
            del f["config"].attrs["text_crc32"]  # edited texts: else a damaged file
            del f["summary"].attrs["sparsity_achieved"]  # a metric it did not record yet
        with h5py.File(other_id, "r+") as f:
            f.attrs["run_id"] = "0123456789abcdef"
            del f.attrs["text_crc32"]
        with h5py.File(newer, "r+") as f:
            f["config"].attrs["option_of_a_later_version"] = 1
            del f["config"].attrs["text_crc32"]
        out = self.reproduce(MLP, older)
        self.assertIn("# note: the run file has no value for eval_at_sync (an option newer than the file): the "
                      "default was used", out)
        self.assertNotIn("config@eval_at_sync", out)  # not a difference: the file could not record it
        self.assertIn("# not compared, recorded only by the newer dpstudy: summary@sparsity_achieved", out)
        self.assertIn("# reproduce: identical", out)
        out = self.reproduce(MLP, other_id)
        run_id = os.path.basename(self.reference)[:-3]
        self.assertIn(f"# note: this dpstudy gives the stored config the run id {run_id}, the file says "
                      "0123456789abcdef (ids were computed differently by the version that wrote it)", out)
        self.assertIn("# reproduce: identical", out)
        self.assertIn(f"--reproduce: {newer}: its config key 'option_of_a_later_version' is no option of this "
                      "dpstudy (the file comes from another version), so the run cannot be reproduced here",
                      self.reproduce(MLP, newer, status=2))
        # A run of a big node's many threads on a small machine: refused, not started on 100,000 threads.
        big_node = os.path.join(self.tmp, "big-node.h5")
        shutil.copy(self.reference, big_node)
        with h5py.File(big_node, "r+") as f:
            f["provenance"].attrs["threads"] = 100000
            del f["provenance"].attrs["text_crc32"]
        self.assertRegex(self.reproduce(MLP, big_node, status=2),
                         r"--reproduce: the run used 100000 threads per process, more than 4 per core of the \d+ "
                         r"cores here; give --threads N, knowing that another thread count may change the bits")

    def test_a_search_trial_and_a_model_option_come_back(self):
        self.exe([MLP, "--dataset", "mnist", "--workers", "2", "--batch_size", "10", "--epochs", "1",
                  "--search", "sobol", "--trials", "2", "--search_lr", "0.01:0.5", "--threads", "1",
                  "--output", self.tmp, "--name", "search"])
        trial = [p for p in glob.glob(os.path.join(self.tmp, "search", "runs", "*.h5"))
                 if h5py.File(p, "r")["config"].attrs["trial"] == 1][0]
        out = self.reproduce(MLP, trial)
        self.assertIn("# reproduce: identical", out)
        self.assertNotIn("# note:", out)  # the same run id: the trial is part of it
        self.exe([RESNET, "--depth", "8", "--workers", "2", "--batch_size", "16", "--epochs", "1",
                  "--sync_period", "2", "--threads", "1", "--output", self.tmp, "--name", "resnet"])
        resnet = glob.glob(os.path.join(self.tmp, "resnet", "runs", "*.h5"))[0]
        self.assertEqual(h5py.File(resnet, "r")["config"].attrs["depth"], 8)
        self.assertIn("# reproduce: identical", self.reproduce(RESNET, resnet))

    def test_what_is_not_a_reproduction_is_refused(self):
        for exe, args, message in (
                (MLP, ["--reproduce", self.reference, "--epochs", "3"],
                 "--reproduce takes every run key from the run file: drop --epochs"),
                (MLP, ["--reproduce", self.reference, "--study", "quickstart.ini"], "drop --study"),
                (RESNET, ["--reproduce", self.reference], "is a run of the mlp-mnist workload; reproduce it with "
                                                          "dpstudy-mlp-mnist"),
                (MLP, ["--reproduce", os.path.join(self.tmp, "ref", "index.h5")], "is not a complete run file"),
                (MLP, ["--reproduce", os.path.join(self.tmp, "nothing.h5")], "no such run file")):
            self.assertIn(message, self.exe([exe, *args], status=2))
        # A stored value no option takes is the file's, not the command line's.
        edited = os.path.join(self.tmp, "edited.h5")
        shutil.copy(self.reference, edited)
        with h5py.File(edited, "r+") as f:
            del f["config"].attrs["group_size"]
            f["config"].attrs["group_size"] = "x"
            del f["config"].attrs["text_crc32"]  # else: a damaged file
        self.assertIn(f"--reproduce: {edited}: its stored config is refused (a damaged or edited run file?): "
                      "--group_size: 'x' must be a whole number", self.exe([MLP, "--reproduce", edited], status=2))


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
