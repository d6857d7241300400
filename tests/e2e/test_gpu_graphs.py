#!/usr/bin/env python3
"""Whole-step CUDA graphs (--cuda_graphs), where a GPU is visible (else exit 77:
CTest reports the test as skipped). A graphed run must give the bits of the same
run stepped eagerly:

- the MLP and ResNet-20, with W = 1, 2 and 8, synchronous and local SGD, group
  averaging, and a rate that a step, cosine or linear schedule and a warm-up
  move (the updates read it on the device, so a graph replays each step's);
- 1 and 2 processes sharing the GPU (each process training runs of its own),
  and runs trained at once in threads of one process (--runs_at_once), graphed
  and eager, on streams of their own, with TF32 runs waiting their turn; a dry
  run sizes auto's lanes from the complete runs' peak memory;
- a graphed run killed and resumed from its checkpoint in the middle;
- --reproduce of a graphed run, graphed and eager;
- a run spread over 2 processes, graphed between its MPI averagings, gives the
  bits of the run in one process;
- each worker on a CUDA stream of its own (--parallel workers, the default on a
  GPU), eager and graphed, gives the bits of every worker on one stream
  (--parallel operations).

usage: test_gpu_graphs.py MLP_EXE RESNET_EXE DPSTUDY_DATA [MPIEXEC]
"""
import glob
import os
import re
import subprocess
import sys
import unittest

import h5py

from e2e_support import MPI_ENV, TempFolderTest, make_fixtures, mpi_launch
from h5compare import assert_same_study

MLP, RESNET, DATA_TOOL = sys.argv[1], sys.argv[2], sys.argv[3]
MPIEXEC = sys.argv[4] if len(sys.argv) > 4 else None
SKIP = 77


def run(exe, args, mpi=0, env=None):
    cmd = [exe, "--threads", "1", "--device", "cuda", *args]
    cmd = mpi_launch(MPIEXEC, mpi) + cmd
    return subprocess.run(cmd, capture_output=True, text=True, env={**MPI_ENV, **(env or {})}, timeout=900)


class Graphs(TempFolderTest):
    prefix = "dpstudy-gpu-graphs-test-"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.data = os.path.join(cls.tmp, "data")
        # 2048 training images: 16 steps an epoch at 8 x 16, enough for each kind
        # of step to be stepped eagerly twice, captured and replayed.
        make_fixtures(DATA_TOOL, cls.data, "2048", "100")

    def study(self, exe, name, graphs, *args, mpi=0, env=None, status=0):
        out = os.path.join(self.tmp, name)
        r = run(exe, ["--data_dir", self.data, "--output", out, "--name", "s", "--cuda_graphs", graphs,
                      *args], mpi=mpi, env=env)
        self.assertEqual(r.returncode, status, r.stdout + r.stderr)
        return os.path.join(out, "s"), r

    def graphed(self, folder, expected="on"):
        for path in glob.glob(os.path.join(folder, "runs", "*.h5")):
            with h5py.File(path, "r") as f:
                self.assertEqual(f["provenance"].attrs["cuda_graphs"], expected, path)

    def same_either_way(self, exe, name, *args, runs):
        eager, _ = self.study(exe, name + "-eager", "off", *args)
        graphed, _ = self.study(exe, name + "-graphed", "on", *args)
        self.graphed(eager, "off")
        self.graphed(graphed)
        self.assertEqual(len(assert_same_study(self, eager, graphed)), runs)
        return eager, graphed

    def test_the_mlp_graphed_gives_the_eager_bits(self):
        self.same_either_way(MLP, "mlp", "--dataset", "mnist", "--workers", "1,2,8", "--batch_size", "16",
                             "--sync_period", "1,4", "--epochs", "2", "--exclude", "workers=1 & sync_period=4",
                             "--schedule", "step", "--lr_milestones", "1", "--eval_every", "5",
                             "--validation_fraction", "0.1", runs=5)

    def test_a_rate_that_moves_every_step_graphed_gives_the_eager_bits(self):
        # Cosine and linear after a warm-up from 0: each step's rate, refilled on the device, one capture for all.
        self.same_either_way(MLP, "moving-rate", "--dataset", "mnist", "--workers", "1,8", "--batch_size", "16",
                             "--sync_period", "1,4", "--epochs", "2", "--exclude", "workers=1 & sync_period=4",
                             "--schedule", "cosine,linear", "--warmup_epochs", "0.5", runs=6)

    def test_group_averaging_graphed_gives_the_eager_bits(self):
        # Three kinds of step: local, local with a group averaging, local with a world averaging.
        self.same_either_way(MLP, "groups", "--dataset", "mnist", "--workers", "8", "--batch_size", "16",
                             "--sync_period", "8", "--group_size", "2", "--group_sync_period", "2", "--epochs", "2",
                             runs=1)

    def test_resnet20_graphed_gives_the_eager_bits(self):
        # Batch norm (its statistics averaged), crop-and-flip augmentation, and a warm-up.
        self.same_either_way(RESNET, "resnet", "--depth", "20", "--workers", "1,2,8", "--batch_size", "16",
                             "--sync_period", "1,3", "--epochs", "1", "--warmup_epochs", "0.25",
                             "--exclude", "workers=1 & sync_period=3", runs=5)

    def test_bf16_graphed_gives_the_eager_bits(self):
        self.same_either_way(RESNET, "bf16", "--depth", "8", "--workers", "2", "--batch_size", "16",
                             "--sync_period", "2", "--epochs", "1", "--precision", "bf16", runs=1)

    @unittest.skipUnless(MPIEXEC, "no mpiexec given")
    def test_two_processes_sharing_the_gpu_give_the_bits_of_one(self):
        args = ["--dataset", "mnist", "--workers", "2,8", "--batch_size", "16", "--sync_period", "1,4", "--epochs", "1"]
        one, _ = self.study(MLP, "one", "off", *args)
        two, _ = self.study(MLP, "two", "on", *args, "--procs_per_run", "1", mpi=2)
        self.graphed(two)
        self.assertEqual(len(assert_same_study(self, one, two)), 4)

    def test_runs_at_once_in_threads_give_the_bits_of_runs_alone(self):
        # Each thread's run on a stream of its own, captured and replayed while the
        # others run; auto sizes the threads from a first run's peak memory.
        args = ["--dataset", "mnist", "--workers", "2,8", "--batch_size", "16", "--sync_period", "1,4", "--epochs", "1",
                "--seeds", "2"]
        alone, _ = self.study(MLP, "alone", "off", *args)
        for graphs, at_once in (("on", "4"), ("off", "3"), ("on", "auto")):
            with self.subTest(graphs=graphs, runs_at_once=at_once):
                packed, r = self.study(MLP, f"packed-{graphs}-{at_once}", graphs, *args, "--runs_at_once", at_once)
                self.graphed(packed, graphs)
                self.assertEqual(len(assert_same_study(self, alone, packed)), 8)
                if at_once == "auto":
                    self.assertRegex(r.stdout, r"# --runs_at_once auto: a first run peaked at [0-9]+ MiB of the "
                                     r"GPU's [0-9]+ MiB, shared by 1 process\(es\): [0-9]+ run\(s\) at once")
                    # The dry run sizes auto's lanes from the complete runs' peaks (a run's few MiB
                    # fit many times): from the 6 left complete, for the 2 whose files are taken away.
                    for path in sorted(glob.glob(os.path.join(packed, "runs", "*.h5")))[:2]:
                        os.remove(path)
                    _, dry = self.study(MLP, f"packed-{graphs}-{at_once}", graphs, *args, "--runs_at_once", at_once,
                                        "--dry_run")
                    lanes = re.search(r"\(--runs_at_once auto\); its complete runs peaked at up to [0-9]+ MiB: "
                                      r"([0-9]+) run\(s\) at once each;", dry.stdout)
                    self.assertIsNotNone(lanes, dry.stdout)
                    self.assertGreater(int(lanes.group(1)), 1, dry.stdout)
                    self.assertIn(f"# schedule: 2 runs on 1 process(es), each training {lanes.group(1)} at once in "
                                  "lanes (--runs_at_once)", dry.stdout)
        # ResNet-20 (cuDNN, batch norm) and precisions: a tf32 run never beside an fp32 one.
        rargs = ["--depth", "8", "--workers", "2", "--batch_size", "16", "--epochs", "1", "--precision", "fp32,tf32,bf16"]
        alone, _ = self.study(RESNET, "resnet-alone", "off", *rargs)
        packed, _ = self.study(RESNET, "resnet-packed", "auto", *rargs, "--runs_at_once", "3")
        self.assertEqual(len(assert_same_study(self, alone, packed)), 3)

    def test_workers_on_streams_of_their_own_give_the_bits_of_one_stream(self):
        # --parallel operations launches every worker on the one current stream, as dpstudy
        # did before streams; workers forks each onto a stream of its own, eager and graphed.
        cases = (
            (MLP, "mlp", ["--dataset", "mnist", "--workers", "2,8", "--batch_size", "16", "--sync_period", "1,4",
                          "--epochs", "1"], 4),
            (RESNET, "resnet", ["--depth", "20", "--workers", "8", "--batch_size", "16", "--sync_period", "1,3",
                                "--epochs", "1"], 2),
        )
        for exe, name, args, runs in cases:
            one, _ = self.study(exe, name + "-one-stream", "off", *args, "--parallel", "operations")
            for parallel, graphs in (("workers", "off"), ("workers", "on"), ("operations", "on")):
                with self.subTest(workload=name, parallel=parallel, graphs=graphs):
                    other, _ = self.study(exe, f"{name}-{parallel}-{graphs}", graphs, *args, "--parallel", parallel)
                    for path in glob.glob(os.path.join(other, "runs", "*.h5")):
                        with h5py.File(path, "r") as f:
                            self.assertEqual(f["provenance"].attrs["parallel"], parallel, path)
                    self.assertEqual(len(assert_same_study(self, one, other)), runs)

    @unittest.skipUnless(MPIEXEC, "no mpiexec given")
    def test_a_run_over_two_processes_graphed_gives_the_bits_of_one_process(self):
        # Each step cut at every averaging: the parts between MPI's calls graphed,
        # MPI on the host between their replays. Averagings of gradients, of
        # parameters and momentum over the world and over groups within and
        # across the processes, and of batch norm's statistics.
        cases = (
            (MLP, "spread-mlp", ["--dataset", "mnist", "--workers", "2,8", "--batch_size", "16", "--sync_period", "1,4",
                                 "--epochs", "1"], 4),
            (MLP, "spread-groups", ["--dataset", "mnist", "--workers", "8", "--batch_size", "16", "--sync_period", "8",
                                    "--group_size", "2,8", "--group_sync_period", "2", "--average_momentum", "1",
                                    "--epochs", "2"], 2),
            (RESNET, "spread-resnet", ["--depth", "8", "--workers", "4", "--batch_size", "16", "--sync_period", "1,3",
                                       "--epochs", "1"], 2),
        )
        # Eager spread runs against one process: CTest mpi_layouts, on the CPU.
        for exe, name, args, runs in cases:
            with self.subTest(workload=name):
                one, _ = self.study(exe, name + "-one", "off", *args)
                spread, _ = self.study(exe, name + "-spread", "on", *args, "--procs_per_run", "2", mpi=2)
                self.graphed(spread)
                self.assertEqual(len(assert_same_study(self, one, spread)), runs)

    def test_a_graphed_run_killed_and_resumed_gives_the_bits_of_one_not_killed(self):
        args = ["--dataset", "mnist", "--workers", "8", "--batch_size", "16", "--sync_period", "4", "--epochs", "2",
                "--checkpoint_steps", "6"]
        whole, _ = self.study(MLP, "whole", "off", *args)
        killed, r = self.study(MLP, "killed", "on", *args, env={"DPSTUDY_TEST_KILL_AT": "step:20"}, status=-9)
        self.assertIn("DPSTUDY_TEST_KILL_AT: killing this process at step:20", r.stderr)
        resumed, r = self.study(MLP, "killed", "on", *args)
        self.assertIn("resuming from its checkpoint at step 18", r.stdout + r.stderr)
        self.graphed(resumed)
        self.assertEqual(len(assert_same_study(self, whole, resumed)), 1)

    def test_a_graphed_run_is_reproduced_bit_for_bit(self):
        out, _ = self.study(MLP, "reference", "on", "--dataset", "mnist", "--workers", "8", "--batch_size", "16",
                            "--sync_period", "4", "--epochs", "1")
        (reference,) = glob.glob(os.path.join(out, "runs", "*.h5"))
        for graphs in ("on", "off"):
            r = run(MLP, ["--reproduce", reference, "--data_dir", self.data, "--output",
                          os.path.join(self.tmp, "again-" + graphs), "--cuda_graphs", graphs])
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("# reproduce: identical", r.stdout)
            self.assertRegex(r.stdout, r"\n  cuda_graphs       " + ("same: on" if graphs == "on" else "on -> off"))


if __name__ == "__main__":
    probe = run(MLP, ["--data_dir", "/nonexistent", "--dry_run"])
    if "is not available" in probe.stdout + probe.stderr:
        print("skipped: no GPU visible to this build:", (probe.stdout + probe.stderr).strip())
        sys.exit(SKIP)
    unittest.main(argv=sys.argv[:1], verbosity=2)
