#!/usr/bin/env python3
"""The layers of suite/ keep their library's boundary: a file of a layer without
LibTorch (dpstudy_core, dpstudy_front) includes no header of a layer of the
engine (dpstudy), and every source file lives in a layer folder. suite/README.md
lists the layers; each layer's CMakeLists.txt names its library.

usage: layers.py SOURCE_DIR
"""
import os
import re
import sys

SUITE = os.path.join(sys.argv[1], "suite")
LIBRARY = re.compile(r"dpstudy_layer\(\s*(\w+)")


def main():
    library, header_layer, problems = {}, {}, []
    for layer in sorted(os.listdir(SUITE)):
        folder = os.path.join(SUITE, layer)
        if not os.path.isdir(folder):
            if layer.endswith((".cpp", ".hpp")):
                problems.append(f"suite/{layer}: a source outside the layer folders")
            continue
        with open(os.path.join(folder, "CMakeLists.txt")) as f:
            m = LIBRARY.search(f.read())
        if not m:
            problems.append(f"suite/{layer}/CMakeLists.txt: no dpstudy_layer(LIBRARY ...)")
            continue
        library[layer] = m.group(1)
        include = os.path.join(folder, "include", "dpstudy")
        for name in os.listdir(include) if os.path.isdir(include) else []:
            header_layer[name] = layer
    for layer, lib in library.items():
        if lib == "dpstudy":
            continue
        for dirpath, _, names in os.walk(os.path.join(SUITE, layer)):
            for name in names:
                if not name.endswith((".cpp", ".hpp", ".in")):
                    continue
                path = os.path.join(dirpath, name)
                with open(path) as f:
                    for n, line in enumerate(f, 1):
                        m = re.match(r'\s*#\s*include\s+"dpstudy/([^"]+)"', line)
                        if m and library.get(header_layer.get(m.group(1), ""), "") == "dpstudy":
                            problems.append(f"{os.path.relpath(path, SUITE)}:{n}: {lib} includes dpstudy/"
                                            f"{m.group(1)} of the engine's layer {header_layer[m.group(1)]}/")
    for p in problems:
        print(p)
    print(f"{len(library)} layers, {len(header_layer)} public headers: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
