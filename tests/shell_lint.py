#!/usr/bin/env python3
"""shellcheck over dpstudy's shell scripts: the tools (tools/gpu-check, which
spends scarce GPU time, tools/quickstart, tools/run-tests, ...), .ci/run and
the tests' helpers. Warnings and errors fail; shellcheck's notes and style
hints do not. Exits 77 (skipped) where shellcheck is not installed
(tools/install-deps installs it).

usage: shell_lint.py SOURCE_DIR
"""
import glob
import os
import shutil
import subprocess
import sys

ROOT = sys.argv[1]


def shell_files():
    """The files of tools/, tests/ and .ci/ whose first line names bash or sh."""
    files = []
    for top in ("tools", "tests", ".ci"):
        for path in glob.glob(os.path.join(ROOT, top, "**", "*"), recursive=True):
            if not os.path.isfile(path):
                continue
            with open(path, "rb") as f:
                first = f.readline()
            if first.startswith(b"#!") and (first.rstrip().endswith(b"bash") or first.rstrip().endswith(b"/sh")):
                files.append(path)
    return sorted(files)


def main():
    shellcheck = shutil.which("shellcheck")
    if not shellcheck:
        print("skipped: no shellcheck on the PATH (apt-get install shellcheck)")
        return 77
    files = shell_files()
    if len(files) < 5:
        print(f"shell_lint: {len(files)} shell scripts under {ROOT}: is it the repository's root?")
        return 1
    r = subprocess.run([shellcheck, "--severity=warning", "--format=gcc", *files], capture_output=True, text=True)
    print(r.stdout + r.stderr, end="")
    print(f"{len(files)} files: shellcheck {'found nothing' if r.returncode == 0 else 'found the above'}")
    return 0 if r.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
