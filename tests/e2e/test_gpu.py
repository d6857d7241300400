#!/usr/bin/env python3
"""The CUDA path, where a GPU is visible (else exit 77: CTest reports the test as
skipped). ResNet-8 with batch norm, augmentation and local SGD on the GPU:

- two identical runs give the same bits (deterministic mode, recorded in provenance, with
  the GPU's model and CUDA versions);
- --precision tf32 gives other bits than the default fp32; NVIDIA_TF32_OVERRIDE=0 is recorded in `gpu`, and a study
  resumed without it is warned of;
- with mpiexec, 1 and 2 processes sharing the GPU give the same bits (host copy or
  CUDA-aware MPI, whichever the MPI library offers);
- a GPU run reproduced (--reproduce) on the GPU gives its bits again, on the CPU other bits;
- a dry run says the runs step their workers on the GPU (not --parallel's side by side);
- it still learns: overfitting 256 samples drives the training loss below 0.1;
- the GPU's results are close to, not equal to, the CPU's (other kernels).

usage: test_gpu.py RESNET_EXE DPSTUDY_DATA [MPIEXEC]
"""
import glob
import os
import subprocess
import sys
import unittest

import h5py

from e2e_support import MPI_ENV, TempFolderTest, make_fixtures, mpi_launch
from h5compare import assert_same_study

EXE, DATA_TOOL = sys.argv[1], sys.argv[2]
MPIEXEC = sys.argv[3] if len(sys.argv) > 3 else None
SKIP = 77


# The environment's settings of a GPU's arithmetic (recorded in `gpu` where set): none
# but those a test sets, whatever the machine's profile holds.
GPU_ARITHMETIC = ("NVIDIA_TF32_OVERRIDE", "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", "CUBLAS_WORKSPACE_CONFIG",
                  "TORCH_BLAS_PREFER_CUBLASLT", "TORCH_CUDNN_V8_API_ENABLED", "TORCH_CUDNN_V8_API_DISABLED")


def run(args, mpi=0, env=None):
    cmd = [EXE, "--threads", "1", *args]
    cmd = mpi_launch(MPIEXEC, mpi) + cmd
    environment = {k: v for k, v in MPI_ENV.items() if k not in GPU_ARITHMETIC}
    return subprocess.run(cmd, capture_output=True, text=True, env={**environment, **(env or {})}, timeout=600)


class Gpu(TempFolderTest):
    prefix = "dpstudy-gpu-test-"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.data = os.path.join(cls.tmp, "data")
        cls.small = os.path.join(cls.tmp, "small")
        for folder, train in ((cls.data, "320"), (cls.small, "256")):
            make_fixtures(DATA_TOOL, folder, train, 50)

    def study(self, name, *args, device="cuda", mpi=0, data=None, env=None):
        out = os.path.join(self.tmp, name)
        batch = [] if "--batch_size" in args else ["--batch_size", "16"]
        r = run(["--data_dir", data or self.data, "--device", device, "--depth", "8", *batch,
                 "--quiet", "--output", out, "--name", "s", *args], mpi=mpi, env=env)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return os.path.join(out, "s")

    def test_same_bits_twice_and_provenance(self):
        args = ["--workers", "2", "--epochs", "1", "--sync_period", "1,3", "--eval_every", "5"]
        a, b = self.study("twice-a", *args), self.study("twice-b", *args)
        self.assertEqual(len(assert_same_study(self, a, b)), 2)
        with h5py.File(sorted(glob.glob(os.path.join(a, "runs", "*.h5")))[0], "r") as f:
            prov = f["provenance"].attrs
            self.assertTrue(str(prov["device"]).startswith("cuda"), prov["device"])
            self.assertEqual(prov["deterministic"], 1)
            # Which GPU, as its driver says, and the CUDA runtime, cuBLAS and cuDNN that computed.
            self.assertRegex(prov["gpu"],
                             r"^\S.*, compute \d+\.\d+, CUDA \d+\.\d+(, cuBLAS \d+\.\d+\.\d+)?(, cuDNN \d+\.\d+\.\d+)?$")
            self.assertNotIn("not described", prov["gpu"])
            self.assertRegex(prov["gpu_driver"], r"^\d+\.\d+$")
            # The GPU memory LibTorch's allocator reserved: what runs sharing a GPU must fit in.
            self.assertTrue(1 < f["summary"].attrs["peak_gpu_mib"] < 200000, f["summary"].attrs["peak_gpu_mib"])

    def test_precision_tf32_and_the_environments_switch_are_recorded(self):
        # fp32, the default, turns TF32 off in cuBLAS and cuDNN; --precision tf32 turns it on:
        # other bits, close (TF32 keeps 10 bits of the mantissa). NVIDIA_TF32_OVERRIDE=0 turns
        # TF32 off for the whole process with no LibTorch flag to tell: `gpu` names it, and the
        # study resumed without it is warned of.
        args = ["--workers", "2", "--epochs", "1", "--augment", "none"]
        runs = {}
        for name, extra, env in (("fp32", [], None), ("tf32", ["--precision", "tf32"], None),
                                 ("tf32-off", ["--precision", "tf32"], {"NVIDIA_TF32_OVERRIDE": "0"})):
            out = self.study(name, *args, *extra, env=env)
            with h5py.File(glob.glob(os.path.join(out, "runs", "*.h5"))[0], "r") as f:
                runs[name] = (str(f["provenance"].attrs["gpu"]), f["train"]["loss"][()],
                              str(f["config"].attrs["precision"]))
        self.assertEqual([runs[n][2] for n in ("fp32", "tf32", "tf32-off")], ["fp32", "tf32", "tf32"])
        self.assertNotIn(";", runs["tf32"][0])
        self.assertTrue(runs["tf32-off"][0].endswith("; NVIDIA_TF32_OVERRIDE=0"), runs["tf32-off"][0])
        self.assertEqual(runs["tf32-off"][0].split(";")[0], runs["tf32"][0])
        self.assertFalse((runs["tf32"][1] == runs["fp32"][1]).all(), "TF32 on and off gave the same losses")
        self.assertAlmostEqual(float(runs["tf32"][1][0]), float(runs["fp32"][1][0]), places=2)
        # Resumed without the override, the study is warned of as made on another GPU stack.
        more = run(["--data_dir", self.data, "--device", "cuda", "--depth", "8", "--batch_size", "16", "--output",
                    os.path.join(self.tmp, "tf32-off"), "--name", "s", *args, "--precision", "tf32", "--seeds", "2"])
        self.assertEqual(more.returncode, 0, more.stdout + more.stderr)
        self.assertRegex(more.stdout, r"# warning: 1 of the 1 complete runs were made with other CUDA libraries or GPU "
                                      r"settings \(LibTorch .*; NVIDIA_TF32_OVERRIDE=0\) than this process's")

    def test_bf16_on_the_gpu_gives_the_same_bits_twice(self):
        args = ["--workers", "2", "--epochs", "1", "--sync_period", "2", "--precision", "bf16"]
        a, b = self.study("bf16-a", *args), self.study("bf16-b", *args)
        self.assertEqual(len(assert_same_study(self, a, b)), 1)

    def test_a_gpu_run_is_reproduced_on_the_gpu_bit_for_bit(self):
        # --reproduce takes the reference's kind of device (here without --device: auto would
        # also take the GPU, so the CPU's refusal path is reproduce_run's); on the CPU, asked
        # for, the bits differ and the provenance says where each ran.
        out = self.study("reproduced", "--workers", "2", "--epochs", "1", "--sync_period", "2")
        (reference,) = glob.glob(os.path.join(out, "runs", "*.h5"))
        again = os.path.join(self.tmp, "again")
        r = run(["--reproduce", reference, "--data_dir", self.data, "--output", again])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"\n  device            same: cuda:\d+\n")
        self.assertIn("# reproduce: identical", r.stdout)
        r = run(["--reproduce", reference, "--data_dir", self.data, "--output", again, "--device", "cpu"])
        self.assertEqual(r.returncode, 4, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"\n  device            cuda:\d+ -> cpu\n")
        self.assertIn("# reproduce: DIFFERENT", r.stdout)

    def test_a_dry_run_says_the_runs_train_on_the_gpu(self):
        # On a GPU --parallel says which runs' workers get CUDA streams of their own: the dry
        # run had counted every GPU run as one "spreading each operation over the threads".
        r = run(["--data_dir", self.data, "--device", "cuda", "--depth", "8", "--batch_size", "16", "--workers",
                 "1,2,4", "--output", os.path.join(self.tmp, "planned"), "--name", "s", "--dry_run"])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"\n# threads: 1 per process, for the host's part; device cuda:\d+: each run "
                                   r"launches its workers one after another; --parallel auto: 2 run\(s\) with each "
                                   r"worker on a CUDA stream of its own, 1 on one stream "
                                   r"\(docs/gpu\.md#replica-streams\)\n")
        self.assertNotIn("side by side", r.stdout)
        # The packing: this node's processes on its GPUs, and the runs --cuda_graphs captures.
        self.assertRegex(r.stdout, r"\n# GPUs: 1 process\(es\) on this node's \d+ GPU\(s\): up to 1 run\(s\) at "
                                   r"once on each; --cuda_graphs off: 0 of 3 runs graphed \(docs/gpu\.md\)\n")

    @unittest.skipUnless(MPIEXEC, "no mpiexec given")
    def test_one_and_two_processes_give_the_same_bits(self):
        args = ["--workers", "2", "--epochs", "1", "--sync_period", "1,3", "--eval_every", "5"]
        one = self.study("one", *args)
        two = self.study("two", *args, "--procs_per_run", "2", mpi=2)
        self.assertEqual(len(assert_same_study(self, one, two)), 2)

    def test_overfits_256_samples(self):
        out = self.study("overfit", "--batch_size", "32", "--augment", "none", "--epochs", "15", "--lr", "0.05",
                         data=self.small)
        with h5py.File(glob.glob(os.path.join(out, "runs", "*.h5"))[0], "r") as f:
            loss = f["train"]["loss"][()]
        self.assertLess(loss[-8:].mean(), 0.1, loss[-8:])

    def test_close_to_the_cpu(self):
        args = ["--workers", "2", "--epochs", "1", "--sync_period", "2", "--augment", "none"]
        losses = {}
        for device in ("cuda", "cpu"):
            out = self.study("vs-" + device, *args, device=device)
            with h5py.File(glob.glob(os.path.join(out, "runs", "*.h5"))[0], "r") as f:
                losses[device] = f["train"]["loss"][()]
        # Same data, same initial weights, other kernels: the first step's loss agrees
        # closely, later ones drift apart slowly.
        self.assertAlmostEqual(float(losses["cuda"][0]), float(losses["cpu"][0]), places=2)
        self.assertLess(abs(float(losses["cuda"][-1]) - float(losses["cpu"][-1])), 0.5)


if __name__ == "__main__":
    probe = run(["--data_dir", "/nonexistent", "--device", "cuda", "--depth", "8", "--dry_run"])
    if "is not available" in probe.stdout + probe.stderr:
        print("skipped: no GPU visible to this build:", (probe.stdout + probe.stderr).strip())
        sys.exit(SKIP)
    unittest.main(argv=sys.argv[:1], verbosity=2)
