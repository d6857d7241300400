#!/usr/bin/env python3
"""The Spack package against the CMake project, without Spack: every variant maps
to exactly one DPSTUDY_ option, CMakeLists.txt declares each of those options,
and a real configure with every option flipped reads every one of them (CMake
warns of a -D that nothing read) and reports the flipped values.

usage: test_spack_package.py SOURCE_DIR TORCH_DIR BUILD_HAS_CUDA(ON|OFF)
"""
import ast
import os
import re
import subprocess
import sys
import tempfile
import unittest

SOURCE, TORCH_DIR, HAS_CUDA = sys.argv[1], sys.argv[2], sys.argv[3] == "ON"
PACKAGE = os.path.join(SOURCE, "spack-repo", "spack_repo", "dpstudy", "packages", "dpstudy", "package.py")
# Variants a base class brings: CudaPackage's cuda (cuda_arch goes to py-torch, not to CMake).
INHERITED = {"cuda"}
# plots: a run dependency (gnuplot) only, nothing to build.
NOT_MAPPED = {"cuda_arch", "build_type", "generator", "ipo", "build_system", "plots"}


def package_facts():
    with open(PACKAGE) as f:
        tree = ast.parse(f.read(), PACKAGE)
    variants, mapping, bases = set(INHERITED), [], []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "Dpstudy":
            bases = [b.id for b in node.bases if isinstance(b, ast.Name)]
        if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
            name = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
            args = [a.value for a in node.args if isinstance(a, ast.Constant)]
            if name == "variant" and args:
                variants.add(args[0])
            elif name == "define_from_variant" and len(args) == 2:
                mapping.append((args[0], args[1]))
    return variants, mapping, bases


def cmake_options():
    with open(os.path.join(SOURCE, "CMakeLists.txt")) as f:
        text = f.read()
    declared = set(re.findall(r"^\s*option\(\s*(DPSTUDY_\w+)", text, re.M))
    declared |= set(re.findall(r"^\s*set\(\s*(DPSTUDY_\w+)\s+\S+\s+CACHE\b", text, re.M))
    return declared


class SpackPackage(unittest.TestCase):
    def test_every_variant_is_one_declared_option(self):
        variants, mapping, bases = package_facts()
        self.assertEqual(bases, ["CMakePackage", "CudaPackage"])
        mapped_variants = [v for _, v in mapping]
        self.assertEqual(sorted(mapped_variants), sorted(set(mapped_variants)), "a variant mapped twice")
        self.assertEqual(set(mapped_variants), variants - NOT_MAPPED, "variants without an option, or the reverse")
        options = [o for o, _ in mapping]
        self.assertEqual(sorted(options), sorted(set(options)), "an option set by two variants")
        missing = set(options) - cmake_options()
        self.assertFalse(missing, f"package.py sets options CMakeLists.txt does not declare: {missing}")
        self.assertEqual(set(options), {"DPSTUDY_WITH_CUDA", "DPSTUDY_WITH_MPI", "DPSTUDY_BUILD_TESTS",
                                        "DPSTUDY_BUILD_BENCHMARKS"})

    def test_cmake_args_is_a_method_that_passes_every_option(self):
        # Spack calls Dpstudy.cmake_args; lines it cannot reach pass nothing. The
        # package once lost its `def cmake_args`, and the option lines sat after a
        # raise in torch_dir: every variant built with CMake's defaults.
        with open(PACKAGE) as f:
            tree = ast.parse(f.read(), PACKAGE)
        cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Dpstudy")
        method = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "cmake_args"), None)
        self.assertIsNotNone(method, "class Dpstudy has no cmake_args method")
        inside = {id(n) for n in ast.walk(method)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") in ("define_from_variant", "define"):
                self.assertIn(id(node), inside, f"line {node.lineno}: a CMake definition outside cmake_args")
        calls = [getattr(n.func, "attr", "") for n in ast.walk(method) if isinstance(n, ast.Call)]
        self.assertIn("torch_dir", calls)
        self.assertEqual(calls.count("define_from_variant"), 4)
        # No statement after a return or raise in the same block, anywhere in the file.
        for node in ast.walk(tree):
            for field in ("body", "orelse", "finalbody"):
                block = getattr(node, field, None)
                if not isinstance(block, list):
                    continue
                for i, stmt in enumerate(block[:-1]):
                    self.assertNotIsInstance(stmt, (ast.Return, ast.Raise),
                                             f"line {block[i + 1].lineno}: unreachable after line {stmt.lineno}")

    def configure(self, *defs):
        with tempfile.TemporaryDirectory(prefix="dpstudy-variant-") as build:
            return subprocess.run(["cmake", "-S", SOURCE, "-B", build, f"-DTorch_DIR={TORCH_DIR}",
                                   *defs], capture_output=True, text=True, timeout=600)

    def test_no_download_address_names_another_account(self):
        # An address the project does not own would fetch what its owner put there:
        # the package builds a checkout the user names (spack develop) instead.
        with open(PACKAGE) as f:
            text = f.read()
        tree = ast.parse(text, PACKAGE)
        assigned = {t.id: n.value for n in ast.walk(tree) if isinstance(n, ast.Assign) for t in n.targets
                    if isinstance(t, ast.Name)}
        self.assertFalse(set(assigned) & {"git", "homepage", "list_url"}, "a download address in package.py")
        # Only a local archive, and the fetch of one that is not there says what to do.
        self.assertTrue(assigned["url"].value.startswith("file:///"), assigned["url"].value)
        self.assertTrue(assigned["manual_download"].value)
        self.assertNotIn("github.com", text)
        self.assertIn("spack develop --path", text)

    def test_plots_bring_gnuplot_with_cairo(self):
        # dpstudy-analyze plot writes PNG through gnuplot's pngcairo terminal (tools/analyze/output.cpp).
        with open(PACKAGE) as f:
            tree = ast.parse(f.read(), PACKAGE)
        deps = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "depends_on" and node.args:
                keywords = {k.arg: getattr(k.value, "value", None) for k in node.keywords}
                deps[getattr(node.args[0], "value", None)] = keywords
        self.assertEqual(deps.get("gnuplot+cairo"), {"when": "+plots", "type": "run"})
        with open(os.path.join(SOURCE, "tools", "analyze", "output.cpp")) as f:
            self.assertIn("pngcairo", f.read())

    def test_a_configure_reads_every_variants_option(self):
        _, mapping, _ = package_facts()
        flipped = {"DPSTUDY_WITH_CUDA": "OFF", "DPSTUDY_WITH_MPI": "OFF", "DPSTUDY_BUILD_TESTS": "OFF",
                   "DPSTUDY_BUILD_BENCHMARKS": "OFF"}
        r = self.configure(*[f"-D{o}={flipped[o]}" for o, _ in mapping])
        out = r.stdout + r.stderr
        self.assertEqual(r.returncode, 0, out)
        unused = out.split("Manually-specified variables were not used by the project:")[1:]
        for option, _ in mapping:
            self.assertFalse(any(option in u for u in unused), f"{option} is set but nothing reads it:\n{out}")
        self.assertIn("MPI=OFF CUDA=OFF tests=OFF benchmarks=OFF", out)

    def test_cuda_on_without_a_cuda_libtorch_is_a_clear_error(self):
        if HAS_CUDA:
            self.skipTest("this LibTorch has CUDA")
        r = self.configure("-DDPSTUDY_WITH_CUDA=ON", "-DDPSTUDY_BUILD_TESTS=OFF", "-DDPSTUDY_BUILD_BENCHMARKS=OFF")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("DPSTUDY_WITH_CUDA=ON, but the LibTorch found", r.stdout + r.stderr)
        r = self.configure("-DDPSTUDY_WITH_CUDA=maybe")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("DPSTUDY_WITH_CUDA='maybe': expected AUTO, ON or OFF", r.stdout + r.stderr)

    def test_linux_only_in_the_package_and_at_configure(self):
        with open(PACKAGE) as f:
            tree = ast.parse(f.read(), PACKAGE)
        requires = [[getattr(a, "value", None) for a in node.args] for node in ast.walk(tree)
                    if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "requires"]
        self.assertIn(["platform=linux"], requires)
        # CMAKE_SYSTEM_NAME given is a cross build for that system: refused before any compiler's error.
        r = self.configure("-DCMAKE_SYSTEM_NAME=Darwin")
        out = " ".join((r.stdout + r.stderr).split())  # CMake wraps its messages
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("dpstudy builds on Linux only", out)
        self.assertIn("this is Darwin", out)

    def test_the_environment_holds_no_machines_compilers(self):
        # Spack writes the compilers it detects into the active environment's
        # spack.yaml (0.x as compilers:, v1 as packages: gcc: externals:); this
        # project's file once shipped its developer's Debian compilers that way.
        with open(os.path.join(SOURCE, "spack.yaml")) as f:
            lines = [line.split("#")[0].rstrip() for line in f]
        keys = [line.strip().rstrip(":") for line in lines if re.match(r"^\s*\w[\w-]*:\s*$", line)]
        for key in ("compilers", "externals", "packages"):
            self.assertNotIn(key, keys, f"spack.yaml has a {key}: section; a cluster's compilers are its own")
        specs = {line.strip().lstrip("- ").strip("'\"").split("@")[0].split()[0] for line in lines
                 if re.match(r"^  - \S", line)}
        for spec in ("py-torch", "openmpi", "hdf5", "boost", "benchmark", "googletest", "cmake", "gnuplot", "zlib"):
            self.assertIn(spec, specs)
        self.assertIn("    unify: true", lines)
        self.assertIn("  view: true", lines)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
