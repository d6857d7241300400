#!/usr/bin/env python3
"""No function in suite/ or tools/analyze/ is longer than 100 lines (issue 58):
a long function is split into steps with names. Counts from the line that
opens a function's body at namespace level to the line that closes it, with
strings and comments left out of the brace count.

usage: function_length.py SOURCE_DIR [LIMIT]
"""
import glob
import os
import re
import sys

ROOT = sys.argv[1]
LIMIT = int(sys.argv[2]) if len(sys.argv) > 2 else 100
STRING = re.compile(r'"([^"\\]|\\.)*"|\'([^\'\\]|\\.)*\'')


def long_functions(path):
    found, depth, start, name = [], 0, None, ""
    raw = False
    with open(path) as f:
        lines = f.read().split("\n")
    for n, line in enumerate(lines, 1):
        # Raw strings (usage texts) hold braces of their own: skip until they end.
        if raw:
            if ')"' in line:
                raw = False
            continue
        code = STRING.sub('""', line.split("//")[0])
        if 'R"(' in code and ')"' not in code.split('R"(', 1)[1]:
            raw = True
            code = code.split('R"(', 1)[0]
        if re.match(r"^\s*namespace\b.*\{", code) or re.match(r"^\s*\}\s*//\s*namespace", line):
            continue
        if depth == 0 and "{" in code and start is None and not code.strip().startswith(("struct", "class", "enum")):
            start, name = n, line.strip()[:70]
        depth += code.count("{") - code.count("}")
        if depth == 0 and start is not None:
            if n - start + 1 > LIMIT:
                found.append((n - start + 1, start, name))
            start = None
    return found


def main():
    files = sorted(glob.glob(os.path.join(ROOT, "suite", "*", "*.cpp")) +
                   glob.glob(os.path.join(ROOT, "tools", "analyze", "*.cpp")))
    problems = []
    for path in files:
        for length, line, name in long_functions(path):
            problems.append(f"{os.path.relpath(path, ROOT)}:{line}: {length} lines (over {LIMIT}): {name}")
    for p in problems:
        print(p)
    print(f"{len(files)} files: {len(problems)} function(s) over {LIMIT} lines")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
