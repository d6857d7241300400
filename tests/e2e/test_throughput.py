#!/usr/bin/env python3
"""--mode throughput: one Google Benchmark benchmark per distinct sweep point,
its counters, Google Benchmark's own flags, the HDF5 table, MPI, bad input.

usage: test_throughput.py WORKLOAD_EXE DPSTUDY_DATA DPSTUDY_ANALYZE [MPIEXEC]
"""
import csv
import io
import json
import math
import os
import re
import shutil
import subprocess
import sys
import unittest

import h5py

from e2e_support import MPI_ENV, TempFolderTest, make_fixtures, mpi_launch, need_gnuplot

EXE, DATA_TOOL, ANALYZE = sys.argv[1], sys.argv[2], sys.argv[3]
MPIEXEC = sys.argv[4] if len(sys.argv) > 4 else ""
TRACE_SUMMARY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "trace-summary")


class Throughput(TempFolderTest):
    prefix = "dpstudy-throughput-test-"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.data = make_fixtures(DATA_TOOL, os.path.join(cls.tmp, "data"), 600, 50)

    def run_exe(self, *args, mpi=0):
        cmd = [EXE, "--data_dir", self.data, "--dataset", "mnist", "--threads", "1", "--batch_size", "10",
               "--mode", "throughput", "--device", "cpu", *args]  # names below say device:cpu, also on a GPU machine
        cmd = mpi_launch(MPIEXEC, mpi) + cmd
        # In the class's folder: calls without --output write results/ under the working directory.
        return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=MPI_ENV, cwd=self.tmp)

    def json_of(self, r):
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return json.loads(r.stdout[r.stdout.index("{"):])["benchmarks"]

    def test_one_benchmark_per_point_with_counters_and_an_hdf5_table(self):
        out = os.path.join(self.tmp, "single")
        r = self.run_exe("--workers", "1,2", "--sync_period", "1,4", "--seeds", "2", "--iterations", "3",
                         "--output", out, "--name", "tp", "--quiet", "--benchmark_format=json")
        runs = self.json_of(r)
        names = [b["run_name"] for b in runs]
        # Seeds do not change the work of a step: 4 points, not 8.
        self.assertEqual(names, ["mlp-mnist/workers:1/batch:10/sync:1/procs:1/device:cpu/iterations:3/manual_time",
                                 "mlp-mnist/workers:1/batch:10/sync:4/procs:1/device:cpu/iterations:3/manual_time",
                                 "mlp-mnist/workers:2/batch:10/sync:1/procs:1/device:cpu/iterations:3/manual_time",
                                 "mlp-mnist/workers:2/batch:10/sync:4/procs:1/device:cpu/iterations:3/manual_time"])
        for b in runs:
            self.assertEqual(b["iterations"], 3)
            self.assertGreater(b["samples_per_s"], 0)
            self.assertTrue(0 <= b["comm_fraction"] < 1)
            self.assertTrue(10 < b["peak_rss_mib"] < 65536, b)
        by = {b["run_name"].split("/procs")[0]: b for b in runs}
        w2s4 = by["mlp-mnist/workers:2/batch:10/sync:4"]
        # A period is H = 4 steps of 2 x 10 samples: samples/s = 20 x steps/s.
        self.assertAlmostEqual(w2s4["samples_per_s"], 20 * w2s4["steps_per_s"], delta=1e-6 * w2s4["samples_per_s"])
        self.assertAlmostEqual(w2s4["bus_bytes_per_s"], w2s4["alg_bytes_per_s"] * 2 * (2 - 1) / 2, delta=1)
        self.assertGreater(by["mlp-mnist/workers:2/batch:10/sync:1"]["alg_bytes_per_s"], 0)
        self.assertEqual(by["mlp-mnist/workers:1/batch:10/sync:1"]["alg_bytes_per_s"], 0)
        with h5py.File(os.path.join(out, "tp", "throughput.h5"), "r") as f:
            self.assertEqual(f.attrs["schema"], "dpstudy.throughput/1")
            t = f["throughput"]
            self.assertEqual(list(t["workers"][()]), [1, 1, 2, 2])
            self.assertEqual(list(t["sync_period"][()]), [1, 4, 1, 4])
            self.assertEqual(t["samples_per_s"].attrs["units"], "samples/s")
            self.assertEqual(t["peak_rss_mib"].attrs["units"], "MiB")
            for i, b in enumerate(runs):
                self.assertAlmostEqual(t["samples_per_s"][i], b["samples_per_s"], delta=1e-6 * b["samples_per_s"])
                self.assertAlmostEqual(t["time_per_period_s"][i] * 1e3, b["real_time"], delta=1e-6 * b["real_time"])
            # What the figures were measured with, in a run file's words (results/README.md).
            prov = f["provenance"].attrs
            for key in ("dpstudy_version", "git_commit", "git_changes", "libtorch", "blas", "blas_build",
                        "cpu_kernels", "hostname", "hosts", "mpi_library", "hdf5", "compiler", "build_type",
                        "command_line"):
                self.assertTrue(prov[key], key)
            self.assertEqual((prov["processes"], prov["threads"], prov["device"], prov["gpu"], prov["gpu_driver"]),
                             (1, 1, "cpu", "none", "none"))
            self.assertIn("--mode throughput", prov["command_line"])

    def test_slips_in_the_sweep_are_warned_of_on_stderr(self):
        r = self.run_exe("--workers", "1,2", "--iterations", "1", "--exclude", "workers=3", "--optimizer", "sgd",
                         "--momentum", "0.5", "--output", os.path.join(self.tmp, "slips"), "--quiet",
                         "--benchmark_format=json")
        self.assertEqual(len(self.json_of(r)), 2)  # stdout is the JSON report alone
        self.assertIn("# warning: the exclude rule 'workers=3' drops no combination: workers takes 1, 2", r.stderr)
        self.assertIn("# warning: momentum changes nothing in any of the 2 runs: optimizer = sgd", r.stderr)

    def test_google_benchmark_flags_filter_repeat_and_write_json(self):
        out = os.path.join(self.tmp, "flags")
        json_out = os.path.join(self.tmp, "gb.json")
        r = self.run_exe("--workers", "1,2", "--iterations", "2", "--output", out, "--name", "tp", "--quiet",
                         "--benchmark_filter=workers:2", "--benchmark_repetitions=3",
                         "--benchmark_report_aggregates_only=true", f"--benchmark_out={json_out}")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(json_out) as f:
            runs = json.load(f)["benchmarks"]
        self.assertEqual(sorted({b["aggregate_name"] for b in runs}), ["cv", "mean", "median", "stddev"])
        self.assertTrue(all("workers:2" in b["name"] for b in runs))
        with h5py.File(os.path.join(out, "tp", "throughput.h5"), "r") as f:
            t = f["throughput"]
            self.assertEqual(sorted(t["aggregate"].asstr()[()]), ["cv", "mean", "median", "stddev"])
            self.assertEqual(set(t["run_type"].asstr()[()]), {"aggregate"})

    def test_analyze_estimates_time_to_result_from_steps_and_steps_per_second(self):
        out = os.path.join(self.tmp, "ttr")
        study = ["--batch_size", "10,20", "--eval_every", "5", "--goal_error", "0.5", "--epochs", "2",
                 "--output", out, "--name", "ttr", "--quiet"]
        base = [EXE, "--data_dir", self.data, "--dataset", "mnist", "--threads", "1", *study]
        for mode in (["--mode", "train"], ["--mode", "throughput", "--iterations", "3"]):
            r = subprocess.run(base + mode, capture_output=True, text=True, timeout=300)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = subprocess.run([ANALYZE, "steps-to-result", os.path.join(out, "ttr"), "--target", "0.5", "--format",
                            "csv", "--throughput", os.path.join(out, "ttr", "throughput.h5")],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        rows = [line.split(",") for line in r.stdout.splitlines() if line and not line.startswith("#")]
        head = rows[0]
        self.assertIn("steps/s", head)
        with h5py.File(os.path.join(out, "ttr", "throughput.h5"), "r") as f:
            speed = dict(zip(f["throughput"]["batch_size"][()], f["throughput"]["steps_per_s"][()]))
        for row in rows[1:]:
            cell = dict(zip(head, row))
            sps = speed[int(cell["batch_size"])]
            self.assertAlmostEqual(float(cell["steps/s"]), sps, delta=1e-3 * sps)
            self.assertAlmostEqual(float(cell["est. time to result (s)"]), float(cell["best (steps)"]) / sps,
                                   delta=1e-3 * float(cell["best (steps)"]) / sps)

    def test_analyze_tabulates_each_point_with_its_speed_up_over_one_worker(self):
        out = os.path.join(self.tmp, "speedup")
        r = self.run_exe("--workers", "1,2,4", "--sync_period", "1,4", "--iterations", "2", "--output", out,
                         "--name", "s", "--quiet")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with h5py.File(os.path.join(out, "s", "throughput.h5"), "r") as f:
            t = f["throughput"]
            rate = {(int(w), int(h)): v for w, h, v in zip(t["workers"][()], t["sync_period"][()],
                                                           t["samples_per_s"][()])}

        def table(*args, status=0):
            r = subprocess.run([ANALYZE, "throughput", *args], capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, status, r.stdout + r.stderr)
            return r.stdout + r.stderr

        rows = list(csv.DictReader(io.StringIO(table(os.path.join(out, "s"), "--format", "csv"))))
        self.assertEqual([(r["workers"], r["sync_period"]) for r in rows],
                         [(w, h) for w in ("1", "2", "4") for h in ("1", "4")])
        for row in rows:
            w, h = int(row["workers"]), int(row["sync_period"])
            self.assertAlmostEqual(float(row["samples/s"]), rate[(w, h)], delta=1e-5 * rate[(w, h)])
            speedup = rate[(w, h)] / rate[(1, h)]  # against 1 worker at the same sync period
            self.assertAlmostEqual(float(row["speed-up (x)"]), speedup, delta=0.01 * speedup)
            self.assertAlmostEqual(float(row["efficiency (fraction)"]), speedup / w, delta=0.01 * speedup / w)
        self.assertNotIn("strong speed-up (x)", rows[0])  # no point holds another's global batch
        # What the figures were measured with, under the table; a table from before /provenance says so.
        self.assertRegex(table(os.path.join(out, "s")), r"\n# measured with: 1 process\(es\) x 1 thread\(s\) on \S+; "
                                                       r"LibTorch [0-9.]+; .+; ATen [A-Z0-9 ]+[^;]*; "
                                                       r"dpstudy [0-9.]+, commit ")
        older = os.path.join(out, "older.h5")
        shutil.copy(os.path.join(out, "s", "throughput.h5"), older)
        with h5py.File(older, "r+") as f:
            del f["provenance"]
        self.assertIn("\n# measured with: not recorded (a table from before 2026-12-03)\n", table(older))
        # A column shorter than the others (a damaged file): a message, not a read past its end.
        short = os.path.join(out, "short.h5")
        shutil.copy(older, short)
        with h5py.File(short, "r+") as f:
            del f["throughput/run_type"]
            f["throughput"].create_dataset("run_type", shape=(0,), dtype="S9")
        self.assertIn(f"{short}: column 'throughput/run_type' has 0 rows, 'benchmark' 6: expected one row per "
                      "reported run", table(short, status=1))
        # A table without the columns a speed-up needs (an edited file, or another program's).
        with h5py.File(older, "r+") as f:
            del f["throughput/samples_per_s"]
        self.assertIn(f"{older}: /throughput has no workers, batch_size or samples_per_s column (not a table of "
                      "--mode throughput?)", table(older, status=1))
        # --where keeps points, not their baseline; the file itself may be given.
        rows = list(csv.DictReader(io.StringIO(table(os.path.join(out, "s", "throughput.h5"), "--where", "workers=4",
                                                     "--where", "sync_period=4", "--format", "csv"))))
        self.assertEqual(len(rows), 1)
        speedup = rate[(4, 4)] / rate[(1, 4)]
        self.assertAlmostEqual(float(rows[0]["speed-up (x)"]), speedup, delta=0.01 * speedup)
        self.assertIn("--where: 'speed=1' names 'speed', not a column of", table(os.path.join(out, "s"), "--where",
                                                                                 "speed=1", status=2))
        self.assertIn("no such file; --mode throughput writes <output>/<study>/throughput.h5",
                      table(os.path.join(out, "nothing"), status=2))
        self.assertIn("--by workers: throughput does not read it", table(os.path.join(out, "s"), "--by", "workers",
                                                                         status=2))

    def test_analyze_plots_samples_per_second_against_workers_with_linear_scaling(self):
        out = os.path.join(self.tmp, "scaling")
        for name, keys in (("weak", ["--batch_size", "10,20", "--sync_period", "1,4"]),
                           ("strong", ["--global_batch", "20"])):
            r = subprocess.run([EXE, "--data_dir", self.data, "--dataset", "mnist", "--threads", "1", "--mode",
                                "throughput", "--workers", "1,2", *keys, "--iterations", "2", "--output", out,
                                "--name", name, "--quiet"], capture_output=True, text=True, timeout=300)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with h5py.File(os.path.join(out, "weak", "throughput.h5"), "r") as f:
            t = f["throughput"]
            rate = {(int(w), int(b)): v for w, b, h, v in zip(t["workers"][()], t["batch_size"][()],
                                                                t["sync_period"][()], t["samples_per_s"][()]) if h == 4}

        def plot(*args, status=0):
            r = subprocess.run([ANALYZE, "plot", "--kind", "scaling", *args], capture_output=True, text=True,
                               timeout=60)
            self.assertEqual(r.returncode, status, r.stdout + r.stderr)
            return r.stdout + r.stderr

        def drawn(svg_path):
            # Each plotted line of the SVG by its title: the points of its first path's last polyline
            # (a titled line's first one is its sample in the key); the dashed lines have no title.
            with open(svg_path) as f:
                svg = f.read()
            lines = []
            for part in svg.split('<g id="gnuplot_plot_')[1:]:
                title = re.search(r"<title>([^<]*)</title>", part).group(1)
                path = re.findall(r"<path stroke='[^']*'(?: stroke-dasharray='[^']*')?\s+d='([^']*)'", part)[0]
                polyline = path.split("M")[-1].replace("L", " ").split()
                points = [tuple(float(v) for v in xy.split(",")) for xy in polyline]
                lines.append((title, points, "stroke-dasharray" in part.split("<path stroke=")[1]))
            ticks = {float(v): float(y) for y, v in re.findall(
                r'translate\([0-9.]+,([0-9.]+)\)[^>]*text-anchor="end">\s*<text><tspan[^>]*> ?([0-9.]+)</tspan>', svg)}
            (v0, y0), (v1, y1) = sorted(ticks.items())[:2]
            return svg, lines, (y0 - y1) / math.log10(v1 / v0)  # pixels per decade of samples/s

        need_gnuplot(self)
        path = os.path.join(out, "weak.svg")
        text = plot(os.path.join(out, "weak"), "--where", "sync_period=4", "--output", path)
        self.assertIn("each worker's batch held along a line: weak scaling", text)
        svg, lines, decade = drawn(path)
        self.assertIn("throughput against workers", svg)
        self.assertIn("linear scaling (dashed)", svg)
        by_title = {title: points for title, points, dashed in lines if not dashed}
        for batch in (10, 20):
            [(x1, y1), (x2, y2)] = by_title[f"batch_size={batch}"]
            # Drawn where the table says: 2 workers' samples/s over 1 worker's, on a log axis.
            self.assertAlmostEqual((y1 - y2) / decade, math.log10(rate[(2, batch)] / rate[(1, batch)]), delta=0.01)
            # The dashed line after it: linear from 1 worker, twice the samples/s at 2.
            i = next(k for k, (title, _, _) in enumerate(lines) if title == f"batch_size={batch}")
            [(d1x, d1y), (d2x, d2y)] = lines[i + 1][1]
            self.assertTrue(lines[i + 1][2])
            self.assertEqual(((d1x, d1y), d2x), ((x1, y1), x2))
            self.assertAlmostEqual((d1y - d2y) / decade, math.log10(2), delta=0.01)
        # A point without a measurement (samples/s 0: a table edited by hand) has no place on a log axis: left out,
        # and the lines after it still drawn from their own data; none at all is an error.
        edited = os.path.join(out, "edited.h5")
        shutil.copy(os.path.join(out, "weak", "throughput.h5"), edited)
        with h5py.File(edited, "r+") as f:
            t = f["throughput"]
            t["samples_per_s"][...] = [0 if b == 10 else v for b, v in zip(t["batch_size"][()], t["samples_per_s"][()])]
            del t["samples_per_s"].attrs["crc32"]  # edited values: else a damaged file
        plot(edited, "--where", "sync_period=4", "--output", path)
        _, lines, decade = drawn(path)
        by_title = {title: points for title, points, dashed in lines if not dashed}
        self.assertNotIn("batch_size=10", by_title)
        [(x1, y1), (x2, y2)] = by_title["batch_size=20"]
        self.assertAlmostEqual((y1 - y2) / decade, math.log10(rate[(2, 20)] / rate[(1, 20)]), delta=0.01)
        self.assertIn("no point kept has a measured samples/s above 0",
                      plot(edited, "--where", "batch_size=10", "--output", path, status=2))
        # Strong scaling: a study holding the global batch gets a line per global batch; two tables
        # in one figure name their study.
        text = plot(os.path.join(out, "strong"), os.path.join(out, "weak"), "--where", "sync_period=1", "--output",
                    os.path.join(out, "both.svg"))
        self.assertIn("strong: the global batch (workers x batch_size) held along a line: strong scaling", text)
        self.assertIn("weak: each worker's batch held along a line: weak scaling", text)
        titles = [title for title, _, dashed in drawn(os.path.join(out, "both.svg"))[1] if not dashed]
        self.assertEqual(titles[:3], ["strong: global_batch=20", "weak: batch_size=10", "weak: batch_size=20"])
        # Repetitions: bars of one standard deviation.
        r = self.run_exe("--workers", "1,2", "--iterations", "2", "--benchmark_repetitions=2", "--output", out,
                         "--name", "repeated", "--quiet")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        plot(os.path.join(out, "repeated"), "--output", os.path.join(out, "repeated.svg"))
        self.assertIn("mean and +/- 1 standard deviation over repetitions", drawn(os.path.join(out, "repeated.svg"))[0])
        # Two points at one worker count on a line, and other slips.
        self.assertIn("the line 'sync_period=1' has two points of workers=1 (they differ in batch_size): give --by "
                      "batch_size for a line each, or keep one with --where batch_size=10",
                      plot(os.path.join(out, "weak"), "--by", "sync_period", "--output", path, status=2))
        self.assertIn("--by: 'workers' names workers, the x axis of plot --kind scaling",
                      plot(os.path.join(out, "weak"), "--by", "workers", "--output", path, status=2))
        self.assertIn("--by: 'lr' names 'lr', not a column of", plot(os.path.join(out, "weak"), "--by", "lr",
                                                                     "--output", path, status=2))
        self.assertIn("--format csv: plot --kind scaling does not read it",
                      plot(os.path.join(out, "weak"), "--format", "csv", "--output", path, status=2))
        self.assertIn("plot needs --output", plot(os.path.join(out, "weak"), status=2))
        self.assertIn("no such file; --mode throughput writes", plot(os.path.join(out, "none"), "--output", path,
                                                                     status=2))

    def test_a_report_holds_the_throughput_measured_beside_the_study(self):
        out = os.path.join(self.tmp, "reported")
        study = [EXE, "--data_dir", self.data, "--dataset", "mnist", "--threads", "1", "--workers", "1,2",
                 "--sync_period", "1,4", "--batch_size", "10", "--output", out, "--name", "both", "--quiet"]
        for mode in (["--epochs", "1"], ["--mode", "throughput", "--iterations", "2"]):
            r = subprocess.run(study + mode, capture_output=True, text=True, timeout=300)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        folder, report = os.path.join(out, "both"), os.path.join(out, "report")
        r = subprocess.run([ANALYZE, "report", folder, "--by", "sync_period", "--where", "workers=2", "--where",
                            "seed=1", "--output", report], capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(os.path.join(report, "report.md")) as f:
            text = f.read()
        # The table of the points the report's --where keeps, with the command that makes it alone;
        # a filter on a key the table lacks (seed: it does not change a step's work) is said to be left out.
        self.assertIn(f"## Throughput\n\n```sh\ndpstudy-analyze throughput {folder} --where 'workers=2'\n```", text)
        self.assertIn("(--where seed=1 left out here: the throughput table has no such column)", text)
        rows = [line for line in text.split("\n") if line.startswith("| 2 | 10 |")]
        self.assertEqual(len(rows), 2, text)
        self.assertIn(f"dpstudy-analyze plot --kind scaling {folder} --where 'workers=2' --output scaling.png", text)
        need_gnuplot(self)
        self.assertIn("![throughput against workers](scaling.png)\n\n- each worker's batch held along a line", text)
        with open(os.path.join(report, "scaling.png"), "rb") as f:
            self.assertTrue(f.read().startswith(b"\x89PNG"))
        # A damaged table: the report is written, saying why that section has no table or figure.
        with open(os.path.join(folder, "throughput.h5"), "wb") as f:
            f.write(b"not an HDF5 file")
        r = subprocess.run([ANALYZE, "report", folder, "--by", "sync_period", "--output", report], capture_output=True,
                           text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(os.path.join(report, "report.md")) as f:
            text = f.read()
        self.assertRegex(text, r"## Throughput\n\n```sh\n[^`]*```\n\n\(no table: [^\n]*throughput.h5")
        self.assertRegex(text, r"--output scaling.png\n```\n\n\(no figure: [^\n]*throughput.h5")
        # A study without a table: no such section.
        os.remove(os.path.join(folder, "throughput.h5"))
        r = subprocess.run([ANALYZE, "report", folder, "--by", "sync_period", "--output", report], capture_output=True,
                           text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(os.path.join(report, "report.md")) as f:
            text = f.read()
        self.assertNotIn("## Throughput", text)
        self.assertNotIn("scaling.png", text)

    def test_steps_to_result_by_the_global_batch_of_swept_workers(self):
        # Shallue et al.'s batch size is the global one: with workers swept, batch_size (per
        # worker) is not it, and the index has no such column; analyze derives global_batch.
        out = os.path.join(self.tmp, "global")
        study = ["--workers", "1,2", "--batch_size", "10,20", "--eval_every", "5", "--goal_error", "0.5",
                 "--epochs", "1", "--output", out, "--name", "global", "--quiet"]
        base = [EXE, "--data_dir", self.data, "--dataset", "mnist", "--threads", "1", *study]
        for mode in (["--mode", "train"], ["--mode", "throughput", "--iterations", "2"]):
            r = subprocess.run(base + mode, capture_output=True, text=True, timeout=300)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        folder, speed_file = os.path.join(out, "global"), os.path.join(out, "global", "throughput.h5")

        def analyze(*args, status=0):
            r = subprocess.run([ANALYZE, *args], capture_output=True, text=True, timeout=120)
            self.assertEqual(r.returncode, status, r.stdout + r.stderr)
            return r.stdout, r.stderr

        rows = list(csv.DictReader(io.StringIO(analyze("runs", folder, "--by", "workers,batch_size,global_batch",
                                                       "--format", "csv")[0])))
        self.assertEqual(sorted((r["workers"], r["batch_size"], r["global_batch"]) for r in rows),
                         [("1", "10", "10"), ("1", "20", "20"), ("2", "10", "20"), ("2", "20", "40")])
        with h5py.File(speed_file, "r") as f:
            t = f["throughput"]
            speed = {(int(w), int(b)): s for w, b, s in zip(t["workers"][()], t["batch_size"][()], t["steps_per_s"][()])}
        text, _ = analyze("steps-to-result", folder, "--target", "0.5", "--by", "global_batch", "--where", "workers=2",
                          "--throughput", speed_file, "--format", "csv")
        rows = list(csv.DictReader(io.StringIO(text)))
        self.assertEqual([r["global_batch"] for r in rows], ["20", "40"])
        for r in rows:
            sps = speed[(2, int(r["global_batch"]) // 2)]
            self.assertAlmostEqual(float(r["steps/s"]), sps, delta=1e-3 * sps)
        self.assertTrue(all(r["log2 x"] == str(round(math.log2(int(r["global_batch"])), 3)) for r in rows), rows)
        # Global batch 20 is 1 x 20 and 2 x 10: the best is taken over both, which is said, and
        # their two throughput points are not one.
        text, _ = analyze("steps-to-result", folder, "--target", "0.5", "--by", "global_batch")
        self.assertIn("pooled over batch_size (10, 20); workers (1, 2)", text)
        _, err = analyze("steps-to-result", folder, "--target", "0.5", "--by", "global_batch", "--throughput",
                         speed_file, status=2)
        self.assertIn("2 throughput points match one group", err)
        # The throughput table: 2 x 10 against 1 x 20 (strong scaling: the global batch held) as
        # well as against 1 x 10 (weak); 2 x 20 has no 1 x 40 to be held against.
        rows = {(r["workers"], r["batch_size"]): r for r in csv.DictReader(io.StringIO(
            analyze("throughput", folder, "--format", "csv")[0]))}
        strong = speed[(2, 10)] / speed[(1, 20)]  # one global batch: the ratio of steps/s is that of samples/s
        self.assertAlmostEqual(float(rows[("2", "10")]["strong speed-up (x)"]), strong, delta=0.01 * strong)
        self.assertAlmostEqual(float(rows[("2", "10")]["strong efficiency (fraction)"]), strong / 2,
                               delta=0.01 * strong)
        self.assertEqual(rows[("2", "20")]["strong speed-up (x)"], "-")
        weak = 2 * speed[(2, 10)] / speed[(1, 10)]  # samples/s: 2 x 10 against 1 x 10 samples a step
        self.assertAlmostEqual(float(rows[("2", "10")]["speed-up (x)"]), weak, delta=0.01 * weak)

    def test_a_swept_key_beyond_the_shape_names_its_points_and_matches_where(self):
        # As docs/findings.md does for lee2021-mini: sparsity swept, one sparsity's steps/s
        # picked by --where. No test swept a key besides workers, batch_size and sync_period.
        out = os.path.join(self.tmp, "sparse")
        study = ["--sparsity", "0,0.5", "--hidden", "64", "--eval_every", "5", "--goal_error", "0.5", "--epochs", "2",
                 "--output", out, "--name", "sparse", "--quiet"]
        r = self.run_exe(*study, "--iterations", "2", "--benchmark_format=json")
        names = [b["run_name"] for b in self.json_of(r)]
        self.assertEqual(names, [f"mlp-mnist/workers:1/batch:10/sync:1/sparsity:{s}/procs:1/device:cpu/iterations:2/"
                                 "manual_time" for s in ("0", "0.5")])
        with h5py.File(os.path.join(out, "sparse", "throughput.h5"), "r") as f:
            t = f["throughput"]
            self.assertEqual(list(t["sparsity"][()]), [0.0, 0.5])
            speed = dict(zip(t["sparsity"][()], t["steps_per_s"][()]))
        r = subprocess.run([EXE, "--data_dir", self.data, "--dataset", "mnist", "--threads", "1", "--batch_size", "10",
                            *study], capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = subprocess.run([ANALYZE, "steps-to-result", os.path.join(out, "sparse"), "--target", "0.5", "--where",
                            "sparsity=0.5", "--format", "csv", "--throughput", os.path.join(out, "sparse",
                                                                                         "throughput.h5")],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        rows = [line.split(",") for line in r.stdout.splitlines() if line and not line.startswith("#")]
        cell = dict(zip(rows[0], rows[1]))
        self.assertAlmostEqual(float(cell["steps/s"]), speed[0.5], delta=1e-3 * speed[0.5])
        # Without --where, both points match the group: refused, naming them.
        r = subprocess.run([ANALYZE, "steps-to-result", os.path.join(out, "sparse"), "--target", "0.5",
                            "--throughput", os.path.join(out, "sparse", "throughput.h5")], capture_output=True,
                           text=True)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("2 throughput points match one group; narrow them with --where (a key of the point):", r.stderr)

    @unittest.skipUnless(MPIEXEC, "no mpiexec given")
    def test_under_mpi_every_point_reports_once_on_the_lead_process(self):
        r = self.run_exe("--workers", "1,2", "--sync_period", "1,2", "--quiet", "--benchmark_format=json", mpi=2)
        runs = self.json_of(r)
        self.assertEqual([b["run_name"].split("/iterations")[0] for b in runs],
                         ["mlp-mnist/workers:1/batch:10/sync:1/procs:1/device:cpu",
                          "mlp-mnist/workers:1/batch:10/sync:2/procs:1/device:cpu",
                          "mlp-mnist/workers:2/batch:10/sync:1/procs:2/device:cpu",
                          "mlp-mnist/workers:2/batch:10/sync:2/procs:2/device:cpu"])
        self.assertTrue(all(b["iterations"] == 10 for b in runs))  # fixed under MPI
        self.assertEqual(r.stdout.count('"benchmarks"'), 1)  # the lead process reports alone
        with h5py.File(os.path.join(self.tmp, "results", "mlp-mnist", "throughput.h5"), "r") as f:
            self.assertEqual(f["provenance"].attrs["processes"], 2)  # the job's
        # mpirun gives the processes pseudo-terminals: the console table came
        # with colour codes even into a pipe or a log file.
        r = self.run_exe("--workers", "2", "--iterations", "2", "--quiet", mpi=2)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("mlp-mnist/workers:2/batch:10/sync:1/procs:2/device:cpu", r.stdout)
        self.assertNotIn("\x1b[", r.stdout)

    def test_profile_writes_a_kineto_trace_per_benchmark_or_says_why_it_cannot(self):
        folder = os.path.join(self.tmp, "profiles")
        r = self.run_exe("--workers", "1,2", "--sync_period", "3", "--iterations", "2", "--profile", folder,
                         "--output", os.path.join(self.tmp, "profiled"))
        if r.returncode == 2:  # Debian's LibTorch is built without Kineto: refused before any benchmark runs
            self.assertIn(f"--profile {folder}: this LibTorch cannot write Kineto traces (", r.stderr)
            self.assertNotIn("manual_time", r.stdout)
            return
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        names = sorted(os.listdir(folder))
        self.assertEqual(names, ["mlp-mnist_workers-1_batch-10_sync-3_procs-1_device-cpu.json",
                                 "mlp-mnist_workers-2_batch-10_sync-3_procs-1_device-cpu.json"])
        self.assertIn("(6 steps)", r.stderr)  # whole periods of 3, at least 4 steps
        s = subprocess.run([sys.executable, TRACE_SUMMARY, *[os.path.join(folder, n) for n in names]],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(s.returncode, 0, s.stdout + s.stderr)
        # 6 steps marked as such, the CPU's operators, no GPU work.
        rows = re.findall(r"^\| mlp-mnist_\S+ \| [0-9.]+ \| 6 \| [0-9.]+ \| [0-9.]+ \| ([0-9.]+) \| 0\.0 \| 0 \| .* \| - \|$",
                          s.stdout, re.M)
        self.assertEqual(len(rows), 2, s.stdout)
        self.assertTrue(all(float(busy) > 0 for busy in rows), s.stdout)

    def test_trace_summary_reads_what_the_gpu_and_the_host_did(self):
        # Kineto's Chrome trace form: two kernels on two streams overlapping for 10 us, a copy,
        # the host's launch calls, an operator, two steps' ranges, and events that are not complete ones.
        ev = [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1000.0, "dur": 40.0},
              {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 1000.0, "dur": 5.0},
              {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 1010.0, "dur": 5.0},
              {"ph": "X", "cat": "kernel", "name": "gemm", "ts": 1020.0, "dur": 20.0, "args": {"stream": 7}},
              {"ph": "X", "cat": "kernel", "name": "gemm", "ts": 1030.0, "dur": 20.0, "args": {"stream": 13}},
              {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH", "ts": 1090.0, "dur": 10.0},
              {"ph": "X", "cat": "user_annotation", "name": "dpstudy_step", "ts": 1000.0, "dur": 30.0},
              {"ph": "X", "cat": "user_annotation", "name": "dpstudy_step", "ts": 1030.0, "dur": 20.0},
              {"ph": "f", "cat": "ac2g", "ts": 1020.0}, {"ph": "M", "name": "process_name"}]
        trace = os.path.join(self.tmp, "hand.json")
        with open(trace, "w", encoding="utf-8") as f:
            json.dump({"schemaVersion": 1, "traceEvents": ev}, f)
        s = subprocess.run([sys.executable, TRACE_SUMMARY, trace], capture_output=True, text=True, timeout=60)
        self.assertEqual(s.returncode, 0, s.stdout + s.stderr)
        # Span 100 us over 2 steps, launched in 30 and 20 us; an operator 40 us; GPU busy 30 + 10 us;
        # kernels 40 us over 30 us busy; CUDA calls 10 us.
        self.assertIn("| hand.json | 0.10 | 2 | 0.050 | 0.025 | 40.0 | 40.0 | 2 | 1.33 | 2 | 10.0 | host launches |",
                      s.stdout)
        broken = os.path.join(self.tmp, "broken.json")
        with open(broken, "w", encoding="utf-8") as f:
            f.write('{"traceEvents": [')
        s = subprocess.run([sys.executable, TRACE_SUMMARY, trace, broken], capture_output=True, text=True, timeout=60)
        self.assertEqual(s.returncode, 1)
        self.assertIn(f"trace-summary: {broken}: ", s.stderr)
        self.assertIn("| hand.json |", s.stdout)  # the good one still reported

    def test_bad_input(self):
        r = subprocess.run([EXE, "--benchmark_filter=x"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("'--benchmark_filter=x' is a Google Benchmark flag: it needs --mode throughput", r.stderr)
        r = subprocess.run([EXE, "--mode", "fast"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--mode: 'fast' is not one of: train, throughput", r.stderr)
        r = self.run_exe("--dry_run")
        self.assertEqual(r.returncode, 2)
        self.assertIn("list its benchmarks with --benchmark_list_tests=true", r.stderr)
        r = self.run_exe("--iterations", "-3")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--iterations: '-3' must be >= 0", r.stderr)
        r = self.run_exe("--benchmark-list-tests=true", "--workers", "1,2", "--quiet")  # the '-' spelling too
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split(), ["mlp-mnist/workers:1/batch:10/sync:1/procs:1/device:cpu/manual_time",
                                            "mlp-mnist/workers:2/batch:10/sync:1/procs:1/device:cpu/manual_time"])
        # A filter matching nothing is a mistake, not an empty success (Google
        # Benchmark alone exits 0), on every process alike.
        for mpi in [0, 2] if MPIEXEC else [0]:
            r = self.run_exe("--workers", "1,2", "--benchmark_filter=workers:4", "--quiet", mpi=mpi)
            self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
            self.assertIn("--benchmark_filter: 'workers:4' matches none of the 2 benchmark(s) "
                          "(list them with --benchmark_list_tests=true)", r.stderr)
        # A results folder rank 0 cannot make: said once, by rank 0 as one process says it, without MPI_Abort.
        blocked = os.path.join(self.tmp, "a-file")
        with open(blocked, "w", encoding="utf-8") as f:
            f.write("not a folder\n")
        for mpi in [0, 2] if MPIEXEC else [0]:
            r = self.run_exe("--workers", "2", "--iterations", "2", "--output", blocked, "--quiet", mpi=mpi)
            self.assertEqual((r.returncode, r.stderr.count("error:")), (2, 1), r.stdout + r.stderr)
            self.assertIn(f"dpstudy-mlp-mnist: error: {blocked}/mlp-mnist: cannot create the results folder", r.stderr)
            self.assertNotIn("MPI_ABORT", r.stderr)
        r = subprocess.run([EXE, "--data_dir", self.data, "--dataset", "mnist", "--profile", self.tmp, "--dry_run"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("--profile traces the steps of throughput mode: it needs --mode throughput", r.stderr)
        r = self.run_exe("--benchmark_colour=false")
        self.assertEqual(r.returncode, 2)
        self.assertIn("unrecognised Google Benchmark flag '--benchmark_colour=false'", r.stderr)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
