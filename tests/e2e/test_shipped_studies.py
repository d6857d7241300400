#!/usr/bin/env python3
"""Every study file in studies/ checks out with the workloads its `workload` key
names (their own dry run, without the dataset files), has the run count that
docs/studies.md's table gives it, and is refused by another workload; and
dpstudy-slurm takes the workload from the key.

usage: test_shipped_studies.py SOURCE_DIR SLURM_LAUNCHER NAME=EXE...
"""
import os
import re
import shlex
import subprocess
import sys
import tempfile
import unittest

SOURCE, LAUNCHER = sys.argv[1:3]
EXES = dict(arg.split("=", 1) for arg in sys.argv[3:])
STUDIES = os.path.join(SOURCE, "studies")
# No dataset files: a dry run must work on a login node before any download.
ENV = dict(os.environ, DPSTUDY_DATA_DIR="")


def study_files():
    return sorted(f for f in os.listdir(STUDIES) if f.endswith(".ini"))


def workload_key(path):
    with open(path) as f:
        for line in f:
            m = re.fullmatch(r"\s*workload\s*=\s*(.*?)\s*", line.split("#", 1)[0].rstrip("\n"))
            if m:
                return [w.strip() for w in m.group(1).split(",")]
    return []


def documented():
    """docs/studies.md's table of shipped studies: file -> (workloads, runs)."""
    table = {}
    with open(os.path.join(SOURCE, "docs", "studies.md")) as f:
        for line in f:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) != 4 or not cells[0].startswith("`") or not cells[0].endswith(".ini`"):
                continue
            files = re.findall(r"`([^`]+\.ini)`", cells[0])
            # A row of several files: "simple-cnn and resnet8-cifar10", "4,000 and 2,000";
            # a runs cell may go on after its number: "24, ~2 min here".
            workloads = [[w.strip() for w in part.split(",")] for part in cells[1].split(" and ")]
            counts = [int(m.group(0).replace(",", "")) for part in cells[3].split(" and ")
                      for m in [re.match(r"\d{1,3}(?:,\d{3})*", part.strip())] if m]
            if len(workloads) == 1:
                workloads *= len(files)
            if not len(files) == len(workloads) == len(counts):
                raise AssertionError(f"docs/studies.md: row {cells[0]} names {len(files)} files, "
                                     f"{len(workloads)} workload lists and {len(counts)} run counts")
            table.update({f: (w, n) for f, w, n in zip(files, workloads, counts)})
    return table


def dry_run(exe, study, out):
    return subprocess.run([exe, "--study", study, "--dry_run", "--output", out], capture_output=True, text=True,
                          env=ENV, timeout=120)


class ShippedStudies(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="dpstudy-shipped-")

    def test_every_study_names_its_workloads(self):
        for f in study_files():
            named = workload_key(os.path.join(STUDIES, f))
            self.assertTrue(named, f"{f} has no workload key")
            for w in named:
                self.assertIn(w, EXES, f"{f}: workload '{w}' is not one of {sorted(EXES)}")

    def test_the_docs_table_lists_every_study(self):
        table = documented()
        self.assertEqual(sorted(table), study_files())
        for f, (workloads, _) in table.items():
            self.assertEqual(workloads, workload_key(os.path.join(STUDIES, f)), f"{f}: workloads in docs/studies.md")

    def test_each_study_checks_out_with_its_documented_run_count(self):
        table = documented()
        for f in study_files():
            for w in workload_key(os.path.join(STUDIES, f)):
                with self.subTest(study=f, workload=w):
                    r = dry_run(EXES[w], os.path.join(STUDIES, f), self.tmp)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    m = re.search(r"^# study (\S+): (\d+) runs", r.stdout, re.M)
                    self.assertTrue(m, r.stdout[:500])
                    self.assertEqual(m.group(1), f[:-4], "a shipped study's name is its file's name")
                    self.assertEqual(int(m.group(2)), table.get(f, (None, None))[1], f"{f}: runs against docs/studies.md")
        self.assertEqual(os.listdir(self.tmp), [], "a dry run writes nothing")

    def test_other_workloads_refuse_a_study(self):
        # Each study against one workload it does not name, the one that has refused the fewest so
        # far, so that every workload refuses some (every pair would start LibTorch 45 times for one rule).
        refused = {w: 0 for w in EXES}
        for f in study_files():
            named = workload_key(os.path.join(STUDIES, f))
            for w in sorted((w for w in EXES if w not in named), key=lambda w: refused[w])[:1]:
                exe = EXES[w]
                refused[w] += 1
                with self.subTest(study=f, workload=w):
                    r = dry_run(exe, os.path.join(STUDIES, f), self.tmp)
                    self.assertEqual(r.returncode, 2, r.stdout[:300])
                    self.assertIn(f"this study is for dpstudy-{named[0]}", r.stderr)
                    self.assertIn(f"not dpstudy-{w}", r.stderr)
        self.assertTrue(all(refused.values()), refused)

    def test_the_slurm_launcher_takes_the_workload_from_the_study(self):
        exe = EXES["simple-cnn"]
        env = dict(ENV, PATH=os.path.dirname(exe) + os.pathsep + os.environ.get("PATH", ""))
        script = os.path.join(self.tmp, "job.sbatch")
        r = subprocess.run([sys.executable, LAUNCHER, os.path.join(STUDIES, "lee2021-mini.ini"), "--output",
                            self.tmp, "--script", script], capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("# study lee2021-mini: 32 runs", r.stdout)
        with open(script) as f:
            self.assertIn(shlex.quote(os.path.realpath(exe)) + " --study", f.read())
        os.remove(script)
        for entry in os.listdir(self.tmp):  # the launcher makes the results folder for Slurm's log
            os.rmdir(os.path.join(self.tmp, entry))

    def test_the_slurm_launcher_needs_a_workload_somewhere(self):
        study = os.path.join(self.tmp, "plain.ini")
        with open(study, "w") as f:
            f.write("[sweep]\nworkers = 1, 2\n")
        r = subprocess.run([sys.executable, LAUNCHER, study], capture_output=True, text=True, env=ENV, timeout=120)
        os.remove(study)
        self.assertEqual(r.returncode, 2)
        self.assertIn("plain.ini: the study file has no workload key; name the executable with --workload",
                      r.stderr)
        r = subprocess.run([sys.executable, LAUNCHER, "no-such-study.ini"], capture_output=True, text=True, env=ENV,
                           timeout=120)
        self.assertEqual(r.returncode, 2)
        self.assertIn("study file 'no-such-study.ini' is neither here nor among the shipped studies", r.stderr)

    @classmethod
    def tearDownClass(cls):
        import shutil
        shutil.rmtree(cls.tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
