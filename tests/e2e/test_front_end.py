#!/usr/bin/env python3
"""A workload's front end and its engine (docs/workloads.md): the front end
links no LibTorch and answers --help, --version and refusals alone, word for
word as its engine does; it says which engine it could not start; and it
becomes the engine in the same process (signals and mpirun reach the engine).

usage: test_front_end.py FRONT_END ENGINE DATA_DIR
"""
import os
import re
import shutil
import subprocess
import sys
import time
import unittest

from e2e_support import TempFolderTest

FRONT, ENGINE, DATA = sys.argv[1], sys.argv[2], sys.argv[3]
TORCH = re.compile(r"\[lib(torch|c10)[^\]]*\.so")


def needed(program):
    out = subprocess.run(["readelf", "-d", program], capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if "(NEEDED)" in line]


def run(program, *args, **kw):
    return subprocess.run([program, *args], capture_output=True, text=True, timeout=120, **kw)


class FrontEnd(TempFolderTest):
    prefix = "dpstudy-front-end-test-"

    @unittest.skipUnless(shutil.which("readelf"), "no readelf")
    def test_only_the_engine_links_libtorch(self):
        self.assertFalse([line for line in needed(FRONT) if TORCH.search(line)], needed(FRONT))
        self.assertTrue([line for line in needed(ENGINE) if TORCH.search(line)], needed(ENGINE))

    def test_refusals_and_help_are_the_engines_own_without_it(self):
        alone = os.path.join(self.tmp, "alone")
        os.makedirs(alone)
        copy = shutil.copy(FRONT, alone)
        study = os.path.join(self.tmp, "bad.ini")
        with open(study, "w") as f:
            f.write("[sweep]\nworkers = 1, 2\nlr = 0.1, fast\n")
        for args in (["--epochs", "x"], ["--wrokers", "2"], ["--workers", "4", "--group_size", "3"],
                     ["--study", study], ["--study", os.path.join(self.tmp, "missing.ini")],
                     ["--version"], ["--help"]):
            ours, engines = run(copy, *args), run(ENGINE, *args)
            self.assertEqual((ours.returncode, ours.stdout, ours.stderr),
                             (engines.returncode, engines.stdout, engines.stderr), args)
            self.assertEqual(ours.returncode, 0 if args[0] in ("--version", "--help") else 2, ours.stderr)

    @unittest.skipUnless(os.path.exists("/dev/full"), "no /dev/full")
    def test_output_that_cannot_be_written_is_an_error(self):
        """Help, version and a dry run sent to a full disk exit 1 and say so, from the front end and the engine."""
        dry = ["--data_dir", DATA, "--workers", "1,2", "--output", os.path.join(self.tmp, "r"), "--dry_run"]
        for program, args in ((FRONT, ["--help"]), (ENGINE, ["--version"]), (FRONT, dry), (ENGINE, dry)):
            with open("/dev/full", "w") as full:
                r = subprocess.run([program, *args], stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
            self.assertEqual((r.returncode, r.stderr.splitlines()[-1:]),
                             (1, [f"{os.path.basename(FRONT)}: error: writing its standard output failed: what it "
                                  "printed is incomplete"]), (args, r.stderr))
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "r")))

    def test_a_missing_engine_is_named_with_the_places_looked_in(self):
        alone = os.path.join(self.tmp, "bin")
        os.makedirs(alone, exist_ok=True)
        copy = shutil.copy(FRONT, alone)
        r = run(copy, "--data_dir", DATA, "--epochs", "1")
        name = os.path.basename(FRONT) + "-engine"
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn(f"{os.path.basename(FRONT)}: error: cannot start its engine, which trains with LibTorch: "
                      f"tried {alone}/{name} (No such file or directory), "
                      f"{alone}/../libexec/dpstudy/{name} (No such file or directory)", r.stderr)
        self.assertEqual(r.stdout, "")

    def test_the_engine_takes_the_front_ends_process(self):
        out = os.path.join(self.tmp, "results")
        job = subprocess.Popen([FRONT, "--data_dir", DATA, "--epochs", "1000", "--batch_size", "10", "--threads", "1",
                                "--output", out, "--name", "long"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline, exe = time.monotonic() + 60, ""
            while time.monotonic() < deadline and job.poll() is None:
                exe = os.readlink(f"/proc/{job.pid}/exe")
                if exe.endswith("-engine"):
                    break
                time.sleep(0.02)
            self.assertEqual(os.path.realpath(exe), os.path.realpath(ENGINE))
            # Once it trains, a study stops at a checkpoint on SIGTERM (exit 5): the engine got the signal.
            for line in job.stdout:
                if line.startswith("[run 1/1] epoch"):
                    break
            job.terminate()
            _, err = job.communicate(timeout=120)
            self.assertEqual(job.returncode, 5, err)
        finally:
            if job.poll() is None:
                job.kill()
                job.communicate()


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
