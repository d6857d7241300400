#!/usr/bin/env python3
"""dpstudy-resnet-cifar10 on generated CIFAR-10 files: a few steps in every sync
mode, ResNet-18, overfitting 256 samples, bad input, and (with mpiexec) the same
bits on 1 and 2 processes with batch norm, augmentation and local SGD.

usage: test_resnet.py RESNET_EXE DPSTUDY_DATA [MPIEXEC]
"""
import glob
import os
import shutil
import subprocess
import sys
import unittest

import h5py

from e2e_support import MPI_ENV, TempFolderTest, make_fixtures, mpi_launch
from h5compare import assert_same_study

EXE, DATA_TOOL = sys.argv[1], sys.argv[2]
MPIEXEC = sys.argv[3] if len(sys.argv) > 3 else None


class ResNet(TempFolderTest):
    prefix = "dpstudy-resnet-test-"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.data = os.path.join(cls.tmp, "data")
        cls.small = os.path.join(cls.tmp, "small")
        cls.tiny = os.path.join(cls.tmp, "tiny")
        for folder, train in ((cls.data, "320"), (cls.small, "256"), (cls.tiny, "40")):
            make_fixtures(DATA_TOOL, folder, train, 50)

    def run_exe(self, *args, data=None, status=0, mpi=0):
        cmd = [EXE, "--data_dir", data or self.data, "--threads", "1", *args]
        cmd = mpi_launch(MPIEXEC, mpi) + cmd
        r = subprocess.run(cmd, capture_output=True, text=True, env=MPI_ENV, timeout=600)
        self.assertEqual(r.returncode, status, f"{args}: {r.stdout}\n{r.stderr}")
        return r.stdout + r.stderr

    def test_every_sync_mode_runs(self):
        for args in (["--workers", "2", "--sync_period", "1"], ["--workers", "2", "--sync_period", "2"],
                     ["--workers", "2", "--sync_period", "never"],
                     ["--workers", "4", "--sync_period", "4", "--group_size", "2", "--group_sync_period", "2"],
                     ["--workers", "2", "--sync_period", "2", "--average_buffers", "false", "--average_momentum", "true"],
                     ["--workers", "2", "--local_sgd_from_epoch", "1", "--sync_period", "3", "--epochs", "2"]):
            base = ["--depth", "8", "--batch_size", "16"] + ([] if "--epochs" in args else ["--epochs", "1"])
            out = self.run_exe(*base, *args)
            self.assertIn("# result: completed", out, args)
        out = self.run_exe("--model", "resnet18", "--batch_size", "8", "--workers", "2", "--epochs", "1",
                           "--eval_batch", "50", "--quiet", data=self.tiny)
        self.assertIn("11173962", out)  # ResNet-18's parameter count for 10 classes

    def test_overfits_256_samples(self):
        out = os.path.join(self.tmp, "overfit")
        self.run_exe("--depth", "8", "--batch_size", "32", "--augment", "none", "--epochs", "15", "--lr", "0.05",
                     "--quiet", "--output", out, "--name", "o", data=self.small)
        with h5py.File(glob.glob(os.path.join(out, "o", "runs", "*.h5"))[0], "r") as f:
            loss = f["train"]["loss"][()]
        self.assertLess(loss[-8:].mean(), 0.1, loss[-8:])

    def test_bad_input(self):
        out = self.run_exe("--depth", "21", status=2)
        self.assertIn("--depth: '21' is not 6n+2", out)
        out = self.run_exe("--model", "resnet50", status=2)
        self.assertIn("--model: 'resnet50' is not one of: cifar-resnet, resnet18", out)
        out = self.run_exe("--memory_format", "nhwc", status=2)
        self.assertIn("--memory_format: 'nhwc' is not one of: contiguous, channels_last", out)
        version = subprocess.run([EXE, "--version"], capture_output=True, text=True).stdout
        if "cuda off" in version:
            out = self.run_exe("--device", "cuda", status=2)
            self.assertIn("--device: 'cuda' is not available: this dpstudy was built with DPSTUDY_WITH_CUDA=OFF", out)
        else:  # a CUDA build refuses only where no GPU is visible (test_gpu.py covers the GPU)
            r = subprocess.run([EXE, "--data_dir", self.tiny, "--device", "cuda", "--depth", "8", "--batch_size", "8",
                                "--epochs", "1", "--quiet", "--output", os.path.join(self.tmp, "cuda-probe")],
                               capture_output=True, text=True, env=MPI_ENV, timeout=600)
            if r.returncode != 0:
                self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
                self.assertIn("--device: 'cuda' is not available: this LibTorch has no CUDA support or no GPU",
                              r.stdout + r.stderr)
        broken = os.path.join(self.tmp, "broken")
        shutil.copytree(self.small, broken)
        os.remove(os.path.join(broken, "cifar10", "test_batch.bin"))
        out = self.run_exe("--depth", "8", data=broken, status=1)
        self.assertIn("missing test_batch.bin", out)
        with open(os.path.join(broken, "cifar10", "test_batch.bin"), "wb") as f:
            f.write(b"\x01" * 5000)
        out = self.run_exe("--depth", "8", data=broken, status=1)
        self.assertIn("test_batch.bin: size 5000 bytes is not a whole number of 3073-byte CIFAR-10 records", out)

    @unittest.skipUnless(MPIEXEC, "no mpiexec given")
    def test_one_and_two_processes_give_the_same_bits(self):
        # In either memory format (channels_last: the weights and inputs as NHWC).
        args = ["--depth", "8", "--workers", "2", "--batch_size", "16", "--epochs", "1", "--sync_period", "1,3",
                "--eval_every", "5", "--memory_format", "contiguous,channels_last", "--quiet", "--name", "s"]
        one, two = os.path.join(self.tmp, "one"), os.path.join(self.tmp, "two")
        self.run_exe(*args, "--output", one)
        self.run_exe(*args, "--output", two, "--procs_per_run", "2", mpi=2)
        runs = assert_same_study(self, os.path.join(one, "s"), os.path.join(two, "s"))
        self.assertEqual(len(runs), 4)
        with h5py.File(os.path.join(one, "s", "index.h5"), "r") as f:
            formats = [x.decode() if isinstance(x, bytes) else x for x in f["index"]["memory_format"][()]]
        self.assertEqual(sorted(formats), ["channels_last", "channels_last", "contiguous", "contiguous"])


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
