#!/usr/bin/env python3
"""Study results as a user meets them: files read with h5py, pandas and h5dump,
and every kind of bad study input.

usage: test_results.py WORKLOAD_EXE DPSTUDY_DATA DPSTUDY_ANALYZE
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import unittest
import zlib

import h5py
import numpy as np

from e2e_support import PLAINEST_ATEN, TempFolderTest, make_fixtures, start_until
import pandas as pd

EXE, DATA_TOOL, ANALYZE = sys.argv[1], sys.argv[2], sys.argv[3]



def checksums_as_documented(path):
    """Checks a file's crc32 and text_crc32 attributes by results/README.md's
    definitions with Python's zlib, independently of dpstudy's code. Returns the
    number of (datasets, objects with texts) that do not match."""
    bad_values, bad_texts = 0, 0

    def texts_crc(attrs):
        crc, any_text = 0, False
        for name in sorted(attrs.keys(), key=lambda n: n.encode()):
            value = attrs[name]
            if name == "text_crc32" or not isinstance(value, (str, bytes)):
                continue
            value = value.encode() if isinstance(value, str) else value
            crc = zlib.crc32(value + b"\0", zlib.crc32(name.encode() + b"\0", crc))
            any_text = True
        return crc if any_text else None

    def visit(name, obj):
        nonlocal bad_values, bad_texts
        if "text_crc32" in obj.attrs or texts_crc(obj.attrs) is not None:
            bad_texts += int(obj.attrs.get("text_crc32") != texts_crc(obj.attrs))
        if isinstance(obj, h5py.Dataset):
            if obj.dtype.kind in "OS":  # texts: each one's UTF-8 bytes (no padding) and a zero byte
                data = b"".join((v if isinstance(v, bytes) else v.encode()) + b"\0" for v in obj[()])
            else:  # numbers: their little-endian bytes, as stored
                data = np.ascontiguousarray(obj[()], dtype=obj.dtype.newbyteorder("<")).tobytes()
            bad_values += int(obj.attrs["crc32"] != zlib.crc32(data))

    with h5py.File(path, "r") as f:
        visit("/", f)
        f.visititems(visit)
    return bad_values, bad_texts

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

    def test_runs_of_an_earlier_invocation_stay_indexed_and_are_named(self):
        out = os.path.join(self.tmp, "edited")
        r = self.run_study("--name", "edited", "--lr", "0.05", "--seeds", "2", "--quiet", output=out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("the index also holds", r.stdout)
        # The study "edited": another learning rate under the same name.
        r = self.run_study("--name", "edited", "--lr", "0.1", "--seeds", "2", "--quiet", output=out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("# study edited done: 4 runs in", r.stdout)
        self.assertIn("# the index also holds 2 run(s) that this invocation does not list", r.stdout)
        with h5py.File(os.path.join(out, "edited", "index.h5"), "r") as f:
            self.assertEqual(sorted(f["index"]["lr"][()]), [0.05, 0.05, 0.1, 0.1])

    def test_index_and_run_files_read_with_h5py_pandas_and_h5dump(self):
        study = "[study]\nname = readable\nseeds = 2\n[sweep]\nworkers = 1,2\noverlap = 0,0.5\nsync_period = 2\n"
        r = self.run_study(study_text=study)
        self.assertEqual(r.returncode, 0, r.stderr)
        folder = os.path.join(self.tmp, "out", "readable")
        with h5py.File(os.path.join(folder, "index.h5"), "r") as f:
            self.assertEqual(f.attrs["schema"], "dpstudy.index/1")
            df = pd.DataFrame({k: f["index"][k][()] for k in f["index"]})
            self.assertEqual(len(df), 6)  # 2 x 2 x 2 seeds, one worker's two overlaps one shared run
            for column in ("run_id", "status", "workers", "overlap", "sync_period", "seed", "final_test_accuracy",
                           "best_test_accuracy", "steps", "wall_time_s", "samples_per_s", "diverged"):
                self.assertIn(column, df.columns)
            self.assertEqual(sorted(df.workers.unique()), [1, 2])
            self.assertEqual(sorted(df.overlap.unique()), [0.0, 0.5])
            self.assertEqual(f["index"]["final_test_accuracy"].attrs["units"], "fraction")
            self.assertTrue(((df.final_test_accuracy > 0) & (df.final_test_accuracy <= 1)).all())
            run_id = df.run_id[0].decode()
            run = f["runs"][run_id]  # an external link into runs/<id>.h5
            self.assertEqual(run.attrs["schema"], "dpstudy.run/1")
            self.assertEqual(run.attrs["run_id"], run_id)
            train = pd.DataFrame({k: run["train"][k][()] for k in run["train"] if k != "worker_loss"})
            self.assertEqual(list(train.step), list(range(1, len(train) + 1)))
            self.assertEqual(run["train"]["worker_loss"].shape, (len(train), run["config"].attrs["workers"]))
            self.assertEqual(run["train"]["loss"].attrs["units"], "nats")
            self.assertIn("study_text", run["config"].attrs)
            self.assertIn("name = readable", run["config"].attrs["study_text"])
            for key in ("dpstudy_version", "git_commit", "libtorch", "hdf5", "mpi_library", "hostname", "hosts",
                        "threads", "command_line", "dataset_checksums", "gpu", "gpu_driver", "cpu_kernels"):
                self.assertIn(key, run["provenance"].attrs)
            # LibTorch's CPU kernels: ATen's level as at::show_config() names it (AVX2, AVX512, NO AVX or DEFAULT),
            # and oneDNN's version and instruction set where LibTorch has it.
            self.assertRegex(run["provenance"].attrs["cpu_kernels"], r"^ATen [A-Z0-9][A-Z0-9 ]*(, oneDNN \d\S* .+)?$")
            self.assertEqual(f["index/cpu_kernels"][0].decode(), run["provenance"].attrs["cpu_kernels"])
            # The GPU: none on the CPU (the driver's description on a GPU: tests/e2e/test_gpu.py).
            if run["provenance"].attrs["device"] == "cpu":
                self.assertEqual(run["provenance"].attrs["gpu"], "none")
                self.assertEqual(run["provenance"].attrs["gpu_driver"], "none")
            self.assertEqual(f["index/gpu"][0].decode(), run["provenance"].attrs["gpu"])
            self.assertIn("sha256=", run["provenance"].attrs["dataset_checksums"])
            # The checkout's state when built (tests/e2e/build_info_git.sh checks each case).
            self.assertRegex(run["provenance"].attrs["git_changes"], r"^(none|uncommitted [0-9a-f]{12}|unknown)$")
            if "OpenBLAS" in run["provenance"].attrs["blas"]:  # its version and the kernels this CPU got
                self.assertRegex(run["provenance"].attrs["blas_build"], r"^OpenBLAS \d+\.\d+\.\d+ .*[A-Za-z]")
            self.assertEqual(run["summary"].attrs["status"], "completed")
            path = os.path.join(folder, "runs", run_id + ".h5")
        for file in (os.path.join(folder, "index.h5"), path):
            r = subprocess.run(["h5dump", "-H", file], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(checksums_as_documented(file), (0, 0))
        with open(os.path.join(folder, "log.txt")) as log:
            self.assertIn("[run 6/6]", log.read())

    def test_each_run_records_its_own_peak_memory(self):
        # A wide MLP (5.8 M parameters: each of 2 workers holds them, their gradients and momentum) and
        # a narrow one, in one process: the longer runs first, so a narrow run follows a wide one.
        out = os.path.join(self.tmp, "memory")
        # On the CPU: the host's memory is what peak_rss_mib measures (on a GPU the model is not there).
        r = subprocess.run([EXE, "--data_dir", self.data, "--dataset", "mnist", "--batch_size", "10", "--threads", "1",
                            "--output", out, "--name", "memory", "--workers", "2", "--hidden", "2048,2048|16",
                            "--epochs", "2,1", "--device", "cpu"], capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        started = [line for line in r.stdout.splitlines() if line.endswith(": starting")]
        self.assertIn("hidden=2048,2048", started[0] + started[1])
        self.assertIn("hidden=16", started[2] + started[3])
        with h5py.File(os.path.join(out, "memory", "index.h5"), "r") as f:
            self.assertEqual(f["index"]["peak_rss_mib"].attrs["units"], "MiB")
            peak = dict(zip(f["index"]["run_id"][()], f["index"]["peak_rss_mib"][()]))
            hidden = dict(zip(f["index"]["run_id"][()], f["index"]["hidden"][()]))
            run_id = next(iter(peak)).decode()
            self.assertEqual(f["runs"][run_id]["summary"].attrs["peak_rss_mib"], peak[run_id.encode()])
            # The GPU's memory: unknown on the CPU (test_gpu.py checks it on a GPU).
            self.assertEqual(f["index"]["peak_gpu_mib"].attrs["units"], "MiB")
            self.assertTrue(np.isnan(f["index"]["peak_gpu_mib"][()]).all())
            self.assertTrue(np.isnan(f["runs"][run_id]["summary"].attrs["peak_gpu_mib"]))
        wide = [peak[i] for i in peak if hidden[i] == b"2048,2048"]
        narrow = [peak[i] for i in peak if hidden[i] == b"16"]
        self.assertTrue(all(10 < p < 65536 for p in wide + narrow), peak)
        # Its parameters, gradients and momentum on 2 workers alone take 130 MiB.
        self.assertGreater(min(wide) - max(narrow), 100, peak)

    def test_dry_run_lists_runs_and_cost_and_runs_nothing(self):
        out = os.path.join(self.tmp, "dry")
        r = self.run_study("--workers", "1,2,4", "--sync_period", "1,8", "--exclude", "workers=1 & sync_period=8",
                           "--dry_run", output=out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("5 runs (1 excluded, 0 already complete), swept: workers, sync_period", r.stdout)
        self.assertIn("estimated cost:", r.stdout)
        self.assertEqual(len(re.findall(r"^ +\d+ +[0-9a-f]{16} +to run ", r.stdout, re.M)), 5, r.stdout)
        self.assertIn("# runs: 5 to run\n", r.stdout)
        self.assertFalse(os.path.exists(out))

    def test_a_global_batch_held_while_workers_are_swept(self):
        # global_batch sets each run's batch_size = global_batch / workers; the runs are those
        # of the batch sizes given by hand (same ids), and analyze groups them by global_batch.
        out = os.path.join(self.tmp, "global")
        base = [EXE, "--data_dir", self.data, "--dataset", "mnist", "--epochs", "1", "--threads", "1", "--output", out]

        def study(*args, status=0):
            r = subprocess.run(base + list(args), capture_output=True, text=True, timeout=300)
            self.assertEqual(r.returncode, status, r.stdout + r.stderr)
            return r

        r = study("--name", "g", "--workers", "1,2,4", "--global_batch", "40,80", "--exclude",
                  "global_batch=80 & batch_size<=40", "--dry_run")
        self.assertIn("4 runs (2 excluded, 0 already complete), swept: workers, global_batch, batch_size", r.stdout)
        listed = re.findall(r"^ +\d+ +([0-9a-f]{16}) +to run .*  (workers=\S+ global_batch=\S+ batch_size=\S+)$",
                            r.stdout, re.M)
        self.assertEqual([axes for _, axes in listed],
                         ["workers=1 global_batch=40 batch_size=40", "workers=1 global_batch=80 batch_size=80",
                          "workers=2 global_batch=40 batch_size=20", "workers=4 global_batch=40 batch_size=10"])
        study("--name", "g", "--workers", "1,2,4", "--global_batch", "40", "--quiet")
        by_hand = study("--name", "h", "--workers", "2", "--batch_size", "20", "--dry_run").stdout
        self.assertIn(listed[2][0], by_hand)  # the same run id as batch_size 20 given by hand
        with h5py.File(os.path.join(out, "g", "index.h5"), "r") as f:
            self.assertEqual(sorted(zip(f["index"]["workers"][()], f["index"]["batch_size"][()])),
                             [(1, 40), (2, 20), (4, 10)])
            self.assertNotIn("global_batch", f["index"])  # a study key, not a run key
        r = subprocess.run([ANALYZE, "summary", os.path.join(out, "g"), "--by", "global_batch"], capture_output=True,
                           text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"\n +40 3 ")
        r = study("--name", "g", "--workers", "1,2", "--global_batch", "40", "--exclude", "batch_size=7", "--dry_run")
        self.assertIn("the exclude rule 'batch_size=7' drops no combination: batch_size is global_batch / workers "
                      "here (it takes 20, 40)", r.stdout)
        # Bad input: a batch that is not whole, a value that is no count, both keys given.
        r = study("--name", "g", "--workers", "3,4", "--global_batch", "40", "--dry_run", status=2)
        self.assertIn("1 combination(s) are invalid (drop them with --exclude):\n"
                      "  workers=3: --global_batch: '40' is not a multiple of workers (3)", r.stderr)
        r = study("--name", "g", "--workers", "3", "--global_batch", "40", "--dry_run", status=2)
        self.assertIn("--global_batch: '40' is not a multiple of workers (3)", r.stderr)
        r = study("--name", "g", "--workers", "2", "--global_batch", "1e2", "--dry_run", status=2)
        self.assertIn("--global_batch: '1e2' must be a whole number of samples >= 1", r.stderr)
        r = study("--name", "g", "--global_batch", "40", "--batch_size", "20", "--dry_run", status=2)
        self.assertIn("--global_batch: '40' cannot be combined with batch_size", r.stderr)

    def test_dry_run_says_how_each_run_uses_the_threads(self):
        cmd = [EXE, "--data_dir", self.data, "--dataset", "mnist", "--batch_size", "10", "--epochs", "1",
               "--output", os.path.join(self.tmp, "dry-threads"), "--threads", "2", "--workers", "1,2,4", "--dry_run",
               "--device", "cpu"]  # on a GPU, auto spreads each operation
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        # One worker on two threads spreads its operations; two and four step side by side.
        self.assertIn("# threads: 2 per process, --parallel auto: 2 run(s) with their workers side by side", r.stdout)
        self.assertIn(", 1 spreading each operation over the threads", r.stdout)
        # Planned for another job (a login node's dry run), the default threads are this process's guess.
        r = subprocess.run(cmd + ["--dry_run_processes", "1"], capture_output=True, text=True, timeout=300)
        self.assertIn("# threads: 2 per process, --parallel auto", r.stdout)
        without = cmd[:cmd.index("--threads")] + cmd[cmd.index("--threads") + 2:]
        r = subprocess.run(without + ["--dry_run_processes", "1"], capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"# threads: \d+ per process \(as this process would set them: give --threads as "
                                   r"that job will\), --parallel auto")

    def test_dry_run_shows_what_another_job_is_doing(self):
        out = os.path.join(self.tmp, "dry-states")
        args = ["--workers", "1,2,4", "--checkpoint_steps", "2"]
        r = self.run_study(*args, "--dry_run", output=out)
        cost = dict(re.findall(r"^ +\d+ +([0-9a-f]{16}) +to run +(\d+) ", r.stdout, re.M))
        self.assertEqual(len(cost), 3, r.stdout)
        # Killed at its 5th step, the first run trained has a checkpoint at step 4.
        r = self.run_study(*args, output=out, env=dict(os.environ, DPSTUDY_TEST_KILL_AT="step:5"))
        self.assertEqual(r.returncode, -9, r.stderr)
        [killed] = re.findall(r"\] ([0-9a-f]{16}) .*: starting", r.stdout)
        other = [i for i in cost if i != killed]
        runs = os.path.join(out, "mlp-mnist", "runs")
        open(os.path.join(runs, other[0] + ".claim"), "w").close()  # a group of a running MPI job took it
        open(os.path.join(runs, other[1] + ".ckpt.h5"), "w").close()  # unreadable: the run starts over
        r = self.run_study(*args, "--dry_run", output=out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, other[0] + r" +running ")
        self.assertRegex(r.stdout, other[1] + r" +to run +" + cost[other[1]] + " ")
        # What the killed run has left: its steps after the 4th, W b samples each.
        m = re.search(killed + r" +resumable +(\d+) +workers=(\d+)", r.stdout)
        self.assertTrue(m, r.stdout)
        self.assertEqual(int(m.group(1)), int(cost[killed]) - 4 * int(m.group(2)) * 10)
        self.assertIn("# runs: 1 running, 1 resumable, 1 to run\n", r.stdout)

    def test_dry_run_plans_with_the_official_size_when_the_dataset_is_not_here(self):
        empty = os.path.join(self.tmp, "no-data")
        os.makedirs(empty, exist_ok=True)
        cmd = [EXE, "--data_dir", empty, "--dataset", "mnist", "--workers", "2", "--batch_size", "10",
               "--epochs", "1", "--output", os.path.join(self.tmp, "dry-no-data")]
        r = subprocess.run(cmd + ["--dry_run"], capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        if "# mnist was not found" not in r.stdout:
            self.skipTest("MNIST is installed on this machine, so the dry run used it")
        self.assertIn("costs assume its official 60000 training images", r.stdout)
        self.assertIn("tools/fetch-datasets mnist", r.stdout)
        self.assertRegex(r.stdout, r"\n +1 +[0-9a-f]{16} +to run +60000 ")  # 3,000 steps x 2 workers x 10
        # A run still needs the files, and says where it looked.
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("mnist: the train split was not found. Searched, in order:", r.stderr)  # train first

    def test_corrupt_run_file_is_reported_and_rerun(self):
        out = os.path.join(self.tmp, "corrupt")
        self.assertEqual(self.run_study("--workers", "1,2", output=out).returncode, 0)
        runs = os.path.join(out, "mlp-mnist", "runs")
        victim = sorted(os.listdir(runs))[0]
        with open(os.path.join(runs, victim), "r+b") as f:
            f.truncate(1000)
        r = self.run_study("--workers", "1,2", output=out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(victim[:-3] + ": run file is corrupt", r.stdout)
        self.assertEqual(r.stdout.count(": starting"), 1)
        # The results I/O of this invocation: its one run, against its training time.
        m = re.search(r"# results I/O: ([0-9.]+) s \(run files, index, checkpoints\) for ([0-9.]+) s of training: "
                      r"([0-9.]+) %", r.stdout)
        self.assertIsNotNone(m, r.stdout)
        io_s, train_s, percent = map(float, m.groups())
        self.assertGreater(io_s, 0)
        # The line prints seconds to 3 decimals and the percentage to 2: the
        # percentage must lie within what the rounded seconds allow.
        lowest = 100 * max(io_s - 0.0005, 0) / (train_s + 0.0005) - 0.005
        highest = 100 * (io_s + 0.0005) / max(train_s - 0.0005, 1e-9) + 0.005
        self.assertTrue(lowest <= percent <= highest, (lowest, percent, highest, r.stdout))
        # Nothing ran: no such line.
        r = self.run_study("--workers", "1,2", output=out)
        self.assertNotIn("# results I/O", r.stdout)
        with h5py.File(os.path.join(runs, victim), "r") as f:
            self.assertEqual(f["summary"].attrs["status"], "completed")

    def test_run_files_the_index_or_analyze_cannot_read_are_rerun(self):
        # Each was kept as a finished run before: the index then left it out
        # (or read an array attribute past its one value), and dpstudy-analyze
        # refused the series, while the study said every run was done.
        out = os.path.join(self.tmp, "unreadable")
        args = ("--workers", "1,2", "--lr", "0.05,0.1", "--quiet")
        self.assertEqual(self.run_study(*args, output=out).returncode, 0)
        runs = os.path.join(out, "mlp-mnist", "runs")
        files = sorted(os.path.join(runs, f) for f in os.listdir(runs))
        self.assertEqual(len(files), 4)
        with h5py.File(files[0], "r+") as f:
            del f["config"].attrs["workers"]
            f["config"].attrs["workers"] = np.array([1, 2])
        with h5py.File(files[1], "r+") as f:
            steps = len(f["eval/step"])
            del f["eval/test_accuracy"]
            f["eval/test_accuracy"] = [0.5] * (steps - 1)
        with h5py.File(files[2], "r+") as f:
            del f["train/lr"]
        # The file format checksums its metadata (version 2 superblock and object headers), and every
        # series its values (Fletcher32): one bit of a loss flipped is refused, not read as another loss.
        with open(files[3], "rb") as f:
            self.assertEqual(f.read(9)[8], 2)
        with h5py.File(files[3], "r") as f:
            self.assertTrue(all(f[g][c].fletcher32 for g in ("train", "eval") for c in f[g]))
            at = f["train/loss"].id.get_chunk_info(0).byte_offset + 8 * 3 + 2  # the fourth loss's third byte
        with open(files[3], "r+b") as f:
            f.seek(at)
            byte = f.read(1)[0]
            f.seek(at)
            f.write(bytes([byte ^ 0x04]))
        r = self.run_study(*args[:-1], output=out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("attribute workers of /config holds 2 values, expected one (a damaged or edited file)); "
                      "rerunning", r.stdout)
        self.assertIn(f"eval/test_accuracy has {steps - 1} values, eval/step has {steps}: expected one value per "
                      "step (a damaged or edited run file)); rerunning", r.stdout)
        self.assertIn("no train/lr series); rerunning", r.stdout)
        self.assertIn("cannot read /train/loss: its values do not match their checksum (a damaged file)); rerunning",
                      r.stdout)
        self.assertEqual(r.stdout.count(": starting"), 4)
        self.assertIn("# study mlp-mnist done: 4 runs in", r.stdout)
        # A group gone (a file cut short by an editor's crash, or a script's slip), and a series' unit
        # damaged (dpstudy-analyze checks it; the study kept the file as finished: tools/fuzz-inputs
        # --seed 4103 found it).
        with h5py.File(files[0], "r+") as f:
            del f["summary"]
        with h5py.File(files[1], "r+") as f:
            f["eval/test_accuracy"].attrs["units"] = "completed"
        r = self.run_study(*args[:-1], output=out)
        self.assertIn("no /summary group); rerunning", r.stdout)
        self.assertIn("the texts of /eval/test_accuracy do not match their checksum (a damaged file)); rerunning",
                      r.stdout)
        self.assertEqual(r.stdout.count(": starting"), 2)
        analyzed = subprocess.run([ANALYZE, "curves", os.path.join(out, "mlp-mnist"), "--by", "workers"],
                                  capture_output=True, text=True, timeout=120)
        self.assertEqual(analyzed.returncode, 0, analyzed.stderr)
        self.assertNotIn("warning", analyzed.stderr)

    def test_a_run_file_under_another_runs_name_is_not_taken_for_it(self):
        out = os.path.join(self.tmp, "renamed")
        self.assertEqual(self.run_study("--workers", "1,2", output=out).returncode, 0)
        runs = os.path.join(out, "mlp-mnist", "runs")
        first = sorted(os.listdir(runs))[0]
        shutil.copy(os.path.join(runs, first), os.path.join(runs, "0000000000000000.h5"))
        r = self.run_study("--workers", "1,2", "--rebuild_index", output=out)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("0000000000000000.h5: holds run " + first[:-3] + ", not 0000000000000000 "
                      "(a renamed or copied run file)", r.stdout + r.stderr)
        with h5py.File(os.path.join(out, "mlp-mnist", "index.h5"), "r") as f:
            self.assertEqual(sorted(x.decode() for x in f["index"]["run_id"][()]),
                             sorted(name[:-3] for name in os.listdir(runs) if name != "0000000000000000.h5"))

    def test_rebuilding_the_index_of_no_study_is_refused(self):
        # A mistyped --output or --name: the message named the index's temporary file.
        out = os.path.join(self.tmp, "no-study")
        r = self.run_study("--rebuild_index", output=out)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn(f"error: {out}/mlp-mnist: no study to index here (no runs/ folder): give the --output and "
                      "--name (or --study) the study was run with", r.stderr)
        self.assertFalse(os.path.exists(out))

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

    def test_results_of_another_schema_are_refused(self):
        out = os.path.join(self.tmp, "schema")
        os.makedirs(os.path.join(out, "old", "runs"))
        with h5py.File(os.path.join(out, "old", "index.h5"), "w") as f:
            f.attrs["schema"] = "dpstudy.index/0"
        r = self.run_study("--name", "old", output=out)
        self.assertEqual(r.returncode, 2)
        self.assertIn("results of schema 'dpstudy.index/0', this dpstudy writes dpstudy.index/1", r.stderr)

    def test_bad_study_input(self):
        cases = [
            ("[sweep]\nwrokers = 2\n", [], "unknown key 'sweep.wrokers'; did you mean 'workers'?"),
            ("workers = 2\nworkers = 4\n", [], "key 'workers' is given twice"),
            ("workers =\n", [], "key 'workers' has an empty value"),
            (None, ["--workers", "1,,2"], "--workers: '1,,2' has an empty value in its list"),
            (None, ["--workers", "1,x"], "--workers: 'x' must be a whole number\n"),
            # A value every combination refuses is named alone, not as combinations to exclude.
            ("[sweep]\nworkers = 1,2\n[train]\neval_every = 0.5\n", [],
             "error: --eval_every: '0.5' must be a whole number\n"),
            (None, ["--workers", "1,2", "--lr", "0.1,fast"], "lr=fast: --lr: 'fast' must be a number, such as 0.05"),
            (None, ["--workers", "99999999999"],
             "--workers: '99999999999' must be a whole number no larger than 2147483647"),
            (None, ["--eval_at_sync", "maybe"], "--eval_at_sync: 'maybe' must be true or false (or 1 or 0"),
            (None, ["--overlap", "0,2"], "1 combination(s) are invalid"),
            (None, ["--overlap", "0,2"], "--overlap: '2' must be in [0, 1]"),
            (None, ["--seeds", "0"], "--seeds: '0' must be a count from 1 to 100000"),
            (None, ["--seeds", "100001"], "--seeds: '100001' must be a count from 1 to 100000"),
            (None, ["--search", "sobol", "--search_lr", "0.001:1", "--trials", "100001"],
             "--trials: '100001' must be a whole number from 1 to 100000"),
            (None, ["--search", "sobol", "--search_lr", "0.001:1", "--trials", "2", "--search_skip", "1e12"],
             "--search_skip: '1e12' must be a whole number from 0 to 2147483647"),
            (None, ["--seeds", "2", "--seed", "3"], "--seeds: '2' cannot be combined with --seed"),
            (None, ["--seed", "-1"], "--seed: '-1' must be a whole number from 0 to 18446744073709551615"),
            (None, ["--seeds", "1,2.5"], "--seed: '2.5' must be a whole number from 0 to 18446744073709551615"),
            (None, ["--data_seed", "-5"], "--data_seed: '-5' must be -1 (the run seed) or a seed >= 0"),
            (None, ["--workers", "1,2", "--exclude", "wrkers=1"], "names unknown key 'wrkers'; did you mean 'workers'?"),
            (None, ["--workers", "1,2", "--exclude", "workers=1;workers=2"], "every combination is excluded"),
            (None, ["--workers", "4,32"], "is too large for workers=32"),
            (None, ["--dry_run_processes", "4"], "--dry_run_processes plans a job without running it: it needs "
                                                 "--dry_run"),
            (None, ["--dry_run", "--dry_run_processes", "-1"],
             "--dry_run_processes: '-1' must be a number of processes from 1 to 1000000 (0: this job's)"),
            # The validation split took the samples: said, since it is as likely the slip.
            (None, ["--validation_fraction", "0.99"], "exceeds the 2 training samples left of 200 by "
                                                      "validation_fraction 0.99"),
            (None, ["--wrokers", "2"], "unrecognised option '--wrokers'; did you mean --workers?"),
            # Nothing close: no suggestion (it suggested 'lr' for anything short).
            ("[sweep]\nq = 2\n", [], "unknown key 'sweep.q'\n"),
            ("[sweep]\n= 2\n", [], "a line has no key before its '=' (in section [sweep])"),
            ("[study]\nworkload = mlp-mnst\n", [], "its workload key names 'mlp-mnst', not a workload of this dpstudy ("),
            ("[study]\nworkload = mlp-mnst\n", [], "); did you mean 'mlp-mnist'?"),
        ]
        for text, args, message in cases:
            r = self.run_study(*args, study_text=text, output=os.path.join(self.tmp, "bad"))
            self.assertEqual(r.returncode, 2, f"{args} {text!r}: {r.stdout} {r.stderr}")
            self.assertIn(message, r.stderr, f"{args} {text!r}")
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "bad")))

    def test_unwritable_output(self):
        r = self.run_study("--workers", "1,2", output=os.path.join(self.data, "manifest.tsv"))
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("cannot create or write the results folder", r.stderr)

    def test_full_disk_leaves_no_incomplete_file_under_a_final_name(self):
        disk = os.path.join(self.tmp, "small-disk")
        os.makedirs(disk)
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=120k", "tmpfs", disk],
                          capture_output=True).returncode != 0:
            self.skipTest("cannot mount a small tmpfs here (needs root)")
        try:
            r = self.run_study("--workers", "1,2", "--seeds", "3", output=disk)
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertIn("No space left on device", r.stderr)
            runs = os.path.join(disk, "mlp-mnist", "runs")
            for name in os.listdir(runs):
                self.assertFalse(name.endswith(".tmp"), name)
                with h5py.File(os.path.join(runs, name), "r") as f:  # every final name opens
                    self.assertIn("summary", f)
        finally:
            subprocess.run(["umount", disk])


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
