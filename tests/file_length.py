#!/usr/bin/env python3
"""No source file of the library, dpstudy-analyze or a workload is longer than
LIMIT lines (400): the style guide's "about 300", with room for a file that
holds one concept whole. A longer file is split by concept (the trainer: its
step, its run, its data). Tests and benchmarks are not held to it.

usage: file_length.py SOURCE_DIR [LIMIT]
"""
import glob
import os
import sys

ROOT = sys.argv[1]
LIMIT = int(sys.argv[2]) if len(sys.argv) > 2 else 400
PATTERNS = ["suite/*/*.cpp", "suite/*/*.hpp", "suite/*/include/dpstudy/*.hpp",
            "tools/analyze/*.cpp", "tools/analyze/*.hpp", "workloads/*/*.cpp", "workloads/*/*.hpp"]


def main():
    files = sorted({p for pattern in PATTERNS for p in glob.glob(os.path.join(ROOT, pattern))})
    if not files:
        print(f"file_length: no source files under {ROOT}: is it the repository's root?")
        return 1
    long_files = []
    for path in files:
        with open(path, encoding="utf-8") as f:
            lines = sum(1 for _ in f)
        if lines > LIMIT:
            long_files.append((lines, os.path.relpath(path, ROOT)))
    for lines, path in sorted(long_files, reverse=True):
        print(f"{path}: {lines} lines (over {LIMIT}): split it by concept")
    print(f"{len(files)} files: {len(long_files)} over {LIMIT} lines")
    return 1 if long_files else 0


if __name__ == "__main__":
    sys.exit(main())
