# dpstudy: reproducible studies of data-parallel neural network training.
# Works with Spack v1.x (package API v2, build systems from spack_repo.builtin)
# and with Spack 0.x (everything from spack.package); docs/spack.md says how it
# was checked.

import glob
import os
import re

import spack
from spack.package import *

try:  # Spack v1.0 and later: the build systems live in the builtin package repository
    from spack_repo.builtin.build_systems.cmake import CMakePackage
    from spack_repo.builtin.build_systems.cuda import CudaPackage
except ImportError:  # Spack 0.x: they came with `from spack.package import *`
    pass


class Dpstudy(CMakePackage, CudaPackage):
    """Benchmark suite for reproducible studies of data-parallel training: how data
    overlap, synchronization period, batch size / learning rate and worker count
    change the accuracy reached and the time to reach it, with HDF5 results and
    significance tests."""

    # No download address: dpstudy has no public repository or release archive
    # yet, and an address that names one would fetch whatever it holds. The
    # package builds the checkout the user names, or a tarball made from one
    # in the folder spack install runs in (docs/spack.md). Anything else stops
    # at the fetch with download_instr below.
    manual_download = True
    # A URL tells Spack the package is fetched as an archive; url_for_version
    # puts it in the folder spack install runs in.
    url = "file:///dpstudy-main.tar.gz"
    license("Apache-2.0")

    version("main")

    def url_for_version(self, version):
        return f"file://{os.getcwd()}/dpstudy-{version}.tar.gz"

    @property
    def download_instr(self):
        return (
            "dpstudy has no public download: build a checkout you name with "
            "spack develop --path /path/to/dpstudy dpstudy@main, then spack install; or make "
            "dpstudy-main.tar.gz from a checkout (git archive --prefix=dpstudy-main/ -o "
            "dpstudy-main.tar.gz HEAD) and run spack install dpstudy@main in its folder (docs/spack.md)"
        )

    # Each variant but `plots` is exactly one DPSTUDY_ CMake option (tests/e2e/test_spack_package.py
    # checks that CMakeLists.txt reads every one). `cuda` and `cuda_arch` come from
    # CudaPackage; cuda maps to DPSTUDY_WITH_CUDA.
    variant("mpi", default=True, description="MPI communicator: runs packed over mpirun/srun processes")
    variant("tests", default=False, description="Build the CTest suite (unit, e2e, mpi)")
    variant("benchmarks", default=False, description="Build the Google Benchmark micro-benchmarks")
    # The one variant without a CMake option: what `dpstudy-analyze plot` runs.
    variant("plots", default=True, description="gnuplot (with cairo, for PNG) for dpstudy-analyze plot and report")

    # Compilers are dependencies from Spack v1.0 on (the c and cxx virtuals); Spack
    # 0.x before 0.23 does not know those virtuals and fails its audit on them.
    if spack.spack_version_info >= (1, 0):
        depends_on("c", type="build")  # FindHDF5 probes the HDF5 C wrapper
        depends_on("cxx", type="build")
    depends_on("cmake@3.18:", type="build")

    # LibTorch is py-torch's: headers, libraries and TorchConfig.cmake under its
    # Python platlib. Its libraries are needed at run time too.
    depends_on("py-torch@1.13:", type=("build", "link", "run"))
    # dpstudy-slurm, dpstudy-selftest and dpstudy-fetch-datasets are Python 3 programs (standard library only).
    depends_on("python@3.8:", type=("build", "run"))
    depends_on("py-torch~cuda", when="~cuda", type=("build", "link", "run"))
    depends_on("py-torch+cuda", when="+cuda", type=("build", "link", "run"))
    for _arch in CudaPackage.cuda_arch_values:
        depends_on(f"py-torch+cuda cuda_arch={_arch}", when=f"+cuda cuda_arch={_arch}",
                   type=("build", "link", "run"))

    depends_on("mpi", when="+mpi", type=("build", "link", "run"))
    # Older ones build too, but cannot open files without HDF5's lock (docs/building.md).
    depends_on("hdf5@1.10:", type=("build", "link"))
    # program_options is compiled; Boost.Math's distributions are header-only.
    depends_on("boost@1.70:+program_options cxxstd=17", type=("build", "link"))
    depends_on("zlib-api", type=("build", "link"))

    # Every workload's throughput mode (--mode throughput) runs on Google Benchmark.
    depends_on("benchmark@1.5:", type=("build", "link"))
    # dpstudy-analyze plot writes PNG through gnuplot's pngcairo terminal (SVG needs no cairo).
    depends_on("gnuplot+cairo", when="+plots", type="run")
    depends_on("googletest", when="+tests", type=("build", "link"))
    # The e2e tests read results with h5py and pandas and check statistics against scipy and statsmodels.
    depends_on("py-h5py", when="+tests", type="test")
    depends_on("py-pandas", when="+tests", type="test")
    depends_on("py-scipy", when="+tests", type="test")
    depends_on("py-statsmodels", when="+tests", type="test")

    conflicts("+cuda", when="cuda_arch=none",
              msg="name the GPU architecture, e.g. cuda_arch=90 (H100/H200) or 80 (A100); "
              "py-torch needs it to build its kernels")
    conflicts("%gcc@:8", msg="dpstudy needs C++17 <filesystem> (GCC 9 or newer)")
    conflicts("%clang@:8", msg="dpstudy needs C++17 <filesystem> (Clang 9 or newer)")
    # /proc and Linux's file times (docs/building.md#platforms); CMake refuses other systems too.
    requires("platform=linux", msg="dpstudy builds on Linux only (docs/building.md#platforms)")

    def torch_dir(self):
        """The folder of TorchConfig.cmake, and how it was found. A Spack-built py-torch keeps
        it under its Python platlib; an external py-torch may keep it elsewhere: its Python's
        torch.utils.cmake_prefix_path (a pip or conda install), or a system folder such as
        Debian's /usr/lib/<multiarch>/cmake/Torch (libtorch-dev beside python3-torch)."""
        torch = self.spec["py-torch"]
        python = self.spec["python"]
        tried = []

        def found(folder, how):
            tried.append(folder)
            if os.path.isfile(join_path(folder, "TorchConfig.cmake")):
                tty.msg(f"dpstudy: LibTorch from {how}: {folder}")
                return True
            return False

        platlib = join_path(torch.prefix, python.package.platlib, "torch", "share", "cmake", "Torch")
        if found(platlib, "py-torch's Python platlib"):
            return platlib
        try:
            prefix_path = python.command(
                "-c", "import torch.utils; print(torch.utils.cmake_prefix_path)", output=str, error=os.devnull
            ).strip()
        except ProcessError:
            prefix_path = ""
        if prefix_path and found(join_path(prefix_path, "Torch"), "torch.utils.cmake_prefix_path"):
            return join_path(prefix_path, "Torch")
        for pattern in ("lib*/cmake/Torch", "lib/*/cmake/Torch", "share/cmake/Torch"):
            for folder in sorted(glob.glob(join_path(torch.prefix, pattern))):
                if found(folder, f"a search of py-torch's prefix ({pattern})"):
                    return folder
        raise InstallError(
            "dpstudy: no TorchConfig.cmake for py-torch " + str(torch.prefix) + "; looked in: " + ", ".join(tried)
            + ", and " + join_path(torch.prefix, "{lib*,lib/*,share}/cmake/Torch")
            + ". An external py-torch needs LibTorch's CMake files (Debian: libtorch-dev)."
        )

    def cuda_libraries(self):
        """The folder of the cuda spec's libcudart.so: lib64 for a Spack-built cuda, a
        multiarch folder for a system one (Debian: /usr/lib/x86_64-linux-gnu); None if
        there is none."""
        prefix = self.spec["cuda"].prefix
        for pattern in ("lib64", "lib", "targets/*/lib", "lib/*"):
            for folder in sorted(glob.glob(join_path(prefix, pattern))):
                if os.path.isfile(join_path(folder, "libcudart.so")):
                    return folder
        return None

    def cmake_args(self):
        spec = self.spec
        torch_dir = self.torch_dir()
        args = [
            self.define_from_variant("DPSTUDY_WITH_CUDA", "cuda"),
            self.define_from_variant("DPSTUDY_WITH_MPI", "mpi"),
            self.define_from_variant("DPSTUDY_BUILD_TESTS", "tests"),
            self.define_from_variant("DPSTUDY_BUILD_BENCHMARKS", "benchmarks"),
            self.define("Torch_DIR", torch_dir),
        ]
        if spec.satisfies("+mpi"):
            args.append(self.define("MPI_CXX_COMPILER", spec["mpi"].mpicxx))
        if spec.satisfies("+cuda"):
            args.append(self.define("CUDAToolkit_ROOT", spec["cuda"].prefix))
            # LibTorch's CMake files read the architectures from this variable; py-torch sets it in
            # the environment, which PyTorch 2.6 warns will become an error.
            # Spack's 90, 90a, 100f are LibTorch's 9.0, 9.0a, 10.0f.
            arch = [re.sub(r"(\d)([a-z]?)$", r".\1\2", a) for a in spec.variants["cuda_arch"].value]
            args.append(self.define("TORCH_CUDA_ARCH_LIST", ";".join(arch)))
            if spec.satisfies("^cuda+allow-unsupported-compilers"):
                # LibTorch's CMake files enable CUDA: CMake runs nvcc, which refuses a host
                # compiler (Spack's CUDAHOSTCXX) newer than its CUDA lists.
                args.append(self.define("CMAKE_CUDA_FLAGS", "-allow-unsupported-compiler"))
        if spec.satisfies("+tests"):
            # The e2e tests run under Spack's Python (py-h5py, py-pandas, py-scipy),
            # not /usr/bin/python3.
            args.append(self.define("DPSTUDY_TEST_PYTHON", spec["python"].command.path))
            if spec.satisfies("+cuda"):
                # The spec's toolkit's driver stub and runtime libraries, for the GPU look-ups'
                # unit tests; each is skipped where it is empty, not run on another toolkit.
                lib = self.cuda_libraries()
                stub = join_path(lib, "stubs", "libcuda.so") if lib else ""
                args.append(self.define("DPSTUDY_TEST_CUDA_DRIVER_STUB", stub if os.path.isfile(stub) else ""))
                args.append(self.define("DPSTUDY_TEST_CUDA_LIBRARIES", lib or ""))
        return args

    # spack test run dpstudy: the installed programs on small generated data, through
    # the installed acceptance suite (docs/building.md, "Validating a node").
    def test_version(self):
        """the installed workload says its version, and whether MPI and CUDA are built in"""
        mlp = which(self.prefix.bin.join("dpstudy-mlp-mnist"), required=True)
        out = mlp("--version", output=str.split, error=str.split)
        assert "dpstudy" in out
        assert ("mpi on" if self.spec.satisfies("+mpi") else "mpi off") in out
        assert ("cuda on" if self.spec.satisfies("+cuda") else "cuda off") in out

    def test_selftest(self):
        """dpstudy-selftest: a 2-worker study on generated MNIST, its summary, the statistics check
        and, with +mpi, a run reproduced bit for bit on 2 MPI processes"""
        selftest = which(self.prefix.bin.join("dpstudy-selftest"), required=True)
        args = ["--workdir", join_path(os.getcwd(), "dpstudy-selftest")]
        if self.spec.satisfies("+mpi"):
            args += ["--mpiexec", join_path(self.spec["mpi"].prefix.bin, "mpiexec")]
        extra_env = {}
        if self.spec.satisfies("^openmpi") and os.geteuid() == 0:  # Open MPI refuses root without these
            extra_env = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
        out = selftest(*args, output=str.split, error=str.split, extra_env=extra_env)
        assert ", 0 failed" in out
        if self.spec.satisfies("+mpi"):
            assert "identical bits" in out
