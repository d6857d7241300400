#!/usr/bin/env python3
"""Study results as a user meets them: files read with h5py, pandas and h5dump,
damaged run files and indexes, and every kind of bad study input.

usage: test_results.py WORKLOAD_EXE DPSTUDY_DATA DPSTUDY_ANALYZE [TEST...] (results_fixture.py)
"""
import os
import re
import shutil
import subprocess
import sys
import unittest
import zlib

import h5py
import numpy as np
import pandas as pd

from results_fixture import ANALYZE, EXE, Results


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


class StudyResults(Results):
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

    def test_a_key_that_a_run_lacks_is_nan_in_the_index(self):
        # A search's runs have a trial, a run of the same study outside it has none: its row is
        # NaN (the column then float64), not 0, which would read as trial 0.
        out = os.path.join(self.tmp, "trials")
        for args in (("--search", "random", "--trials", "2", "--search_lr", "0.01:0.1"), ("--lr", "0.05")):
            r = self.run_study("--name", "t", "--quiet", *args, output=out)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with h5py.File(os.path.join(out, "t", "index.h5"), "r") as f:
            lr, trial = f["index"]["lr"][()], f["index"]["trial"][()]
        self.assertEqual(trial.dtype, np.float64)
        self.assertEqual(sorted(trial[~np.isnan(trial)]), [0, 1])
        self.assertEqual([float(x) for x, t in zip(lr, trial) if np.isnan(t)], [0.05])

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
    unittest.main(argv=[sys.argv[0], *sys.argv[4:]], verbosity=2)
