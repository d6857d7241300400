#!/usr/bin/env python3
"""pyflakes over dpstudy's Python: the tools users run (dpstudy-slurm,
fetch-datasets, dpstudy-selftest, ...) and the tests. A misspelt name in an
error branch passes every test that never takes that branch, then crashes with
a traceback where a message was due; pyflakes finds it without running it.
Exits 77 (skipped) where pyflakes is not installed (tools/install-deps installs
pyflakes3). The Spack recipe is left out: Spack's recipes import * by design.

usage: python_lint.py SOURCE_DIR
"""
import glob
import os
import subprocess
import sys

ROOT = sys.argv[1]


def python_files():
    """The tests' and tools' .py files and the tools' scripts whose first line names python."""
    files = set(glob.glob(os.path.join(ROOT, "tests", "**", "*.py"), recursive=True))
    for path in glob.glob(os.path.join(ROOT, "tools", "**", "*"), recursive=True):
        if not os.path.isfile(path):
            continue
        if path.endswith(".py"):
            files.add(path)
            continue
        with open(path, "rb") as f:
            first = f.readline()
        if first.startswith(b"#!") and b"python" in first:
            files.add(path)
    return sorted(files)


def main():
    if subprocess.run([sys.executable, "-c", "import pyflakes"], capture_output=True).returncode != 0:
        print(f"skipped: {sys.executable} has no pyflakes (apt-get install pyflakes3)")
        return 77
    files = python_files()
    if len(files) < 10:
        print(f"python_lint: {len(files)} Python files under {ROOT}: is it the repository's root?")
        return 1
    r = subprocess.run([sys.executable, "-m", "pyflakes", *files], capture_output=True, text=True)
    print(r.stdout + r.stderr, end="")
    print(f"{len(files)} files: pyflakes {'found nothing' if r.returncode == 0 else 'found the above'}")
    return 0 if r.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
