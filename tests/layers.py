#!/usr/bin/env python3
"""The layers of suite/ keep their library's boundary: a file of a layer without
LibTorch (dpstudy_core, dpstudy_front) includes no header of a layer of the
engine (dpstudy), and every source file lives in a layer folder. And they keep
their order: a layer includes public headers only of the layers listed before
it in suite/README.md's table, the one place the order is written, so that no
include runs back up. Each layer's CMakeLists.txt names its library.

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
        cmake = os.path.join(folder, "CMakeLists.txt")
        if not os.path.isfile(cmake):
            problems.append(f"suite/{layer}/: a folder without CMakeLists.txt: a layer needs one")
            continue
        with open(cmake) as f:
            m = LIBRARY.search(f.read())
        if not m:
            problems.append(f"suite/{layer}/CMakeLists.txt: no dpstudy_layer(LIBRARY ...)")
            continue
        library[layer] = m.group(1)
        include = os.path.join(folder, "include", "dpstudy")
        for name in os.listdir(include) if os.path.isdir(include) else []:
            header_layer[name] = layer
    # The layers in order: the rows of suite/README.md's table.
    with open(os.path.join(SUITE, "README.md")) as f:
        order = re.findall(r"^\| `(\w+)/` \|", f.read(), re.M)
    for layer in sorted(set(library) ^ set(order)):
        problems.append(f"suite/{layer}/: " + ("a layer missing from suite/README.md's table" if layer in library
                                               else "in suite/README.md's table, but no layer folder"))
    for layer, lib in library.items():
        for dirpath, _, names in os.walk(os.path.join(SUITE, layer)):
            for name in names:
                if not name.endswith((".cpp", ".hpp", ".in")):
                    continue
                path = os.path.join(dirpath, name)
                with open(path) as f:
                    for n, line in enumerate(f, 1):
                        m = re.match(r'\s*#\s*include\s+"dpstudy/([^"]+)"', line)
                        other = header_layer.get(m.group(1), "") if m else ""
                        if not other or other == layer:
                            continue
                        where = f"{os.path.relpath(path, SUITE)}:{n}: "
                        if lib != "dpstudy" and library.get(other) == "dpstudy":
                            problems.append(f"{where}{lib} includes dpstudy/{m.group(1)} of the engine's layer {other}/")
                        elif layer in order and other in order and order.index(other) > order.index(layer):
                            problems.append(f"{where}{layer}/ includes dpstudy/{m.group(1)} of {other}/, a layer after "
                                            f"it (the order: {', '.join(order)})")
    for p in problems:
        print(p)
    print(f"{len(library)} layers, {len(header_layer)} public headers: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
