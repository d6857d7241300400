#!/usr/bin/env python3
"""Clang's front end over every translation unit that does not include LibTorch:
GCC, which builds the project, accepts some code that C++17 forbids and Clang
refuses (a lambda capturing a structured binding: found twice in
dpstudy-analyze, each time only by a later tools/check-clang). Clusters'
compilers are often Clang-based. -fsyntax-only with the build's own flags takes
seconds a file; the LibTorch files (about 30 s each under Clang) are left to
tools/check-clang.

usage: clang_cxx17.py BUILD_DIR CLANGXX    (exit 77, skipped, without a clang++)
"""
import json
import os
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor


def clang_args(entry, clang):
    """The entry's compile command for clang++, checking syntax only, or None for a LibTorch file."""
    args = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    if any(a.startswith(("-I", "/")) and "torch" in a for a in args):  # -I/... or -isystem /...
        return None
    out = [clang, "-fsyntax-only"]
    skip = False
    for a in args[1:]:
        if skip:
            skip = False
            continue
        if a in ("-o", "-MF", "-MT", "-MQ"):
            skip = True
            continue
        if a in ("-c", "-MD", "-MMD"):
            continue
        out.append(a)
    return out


def main():
    build, clang = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else ""
    if not clang or not os.access(clang, os.X_OK):
        print("no clang++ (apt-get install clang): skipped")
        return 77
    path = os.path.join(build, "compile_commands.json")
    with open(path) as f:
        entries = json.load(f)
    checks = []
    for e in entries:
        args = clang_args(e, clang)
        cxx = e["file"].endswith((".cpp", ".cc", ".cxx"))  # a test's C helper (an LD_PRELOAD library) is not C++
        if cxx and args is not None and not e["file"].startswith(os.path.join(build, "")):  # not generated code
            checks.append((e["file"], e["directory"], args))
    if len(checks) < 20:
        print(f"{path}: only {len(checks)} files without LibTorch: the compile database is not the build's")
        return 1

    def check(item):
        file, directory, args = item
        r = subprocess.run(args, cwd=directory, capture_output=True, text=True)
        return file, r.returncode, r.stderr

    failed = 0
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for file, code, err in pool.map(check, checks):
            if code != 0:
                failed += 1
                print(f"FAILED {file}\n{err}")
            elif err.strip():  # a warning under the project's flags
                failed += 1
                print(f"WARNED {file}\n{err}")
    version = subprocess.run([clang, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    print(f"{len(checks)} translation units without LibTorch checked by {version}: {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
