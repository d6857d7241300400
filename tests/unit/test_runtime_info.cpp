// The default thread count's inputs: which CPUs this process may use and how
// many physical cores they are, read from a sysfs topology tree; the peak
// resident memory a run records; the GPU as the driver describes it, and the
// versions of the CUDA libraries loaded.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "dpstudy/runtime_info.hpp"
#include "test_support.hpp"

using namespace dpstudy;
using namespace dpstudy::test;

namespace {

// <root>/cpuN/topology/{core_id,physical_package_id}, as Linux lays them out.
void write_cpu(const std::string& root, int cpu, int core, int package) {
  const std::string dir = root + "/cpu" + std::to_string(cpu) + "/topology";
  make_dirs(dir);
  std::ofstream(dir + "/core_id") << core << "\n";
  std::ofstream(dir + "/physical_package_id") << package << "\n";
}

}  // namespace

// GCC says -fsanitize=address with __SANITIZE_ADDRESS__; Clang 14 (checked here) only through __has_feature.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

TEST(RuntimeInfo, HardwareThreadsOfOneCoreCountOnce) {
  ScratchDir dir;
  const std::string root = dir.str();
  // Two packages of two cores, two hardware threads each (SMT), numbered as
  // Linux often does: cpu0-3 the first threads, cpu4-7 their siblings.
  for (int cpu = 0; cpu < 8; ++cpu) write_cpu(root, cpu, cpu % 2, (cpu / 2) % 2);
  EXPECT_EQ(physical_cores({0, 1, 2, 3, 4, 5, 6, 7}, root), 4);
  EXPECT_EQ(physical_cores({0, 4}, root), 1);     // a process bound to one core and its sibling
  EXPECT_EQ(physical_cores({0, 1, 2, 3}, root), 4);
  EXPECT_EQ(physical_cores({1, 3}, root), 2);     // core 1 of each package: the ids repeat per package
  // Without a readable topology (a container hiding sysfs): every CPU counts.
  EXPECT_EQ(physical_cores({0, 1, 9}, root), 3);
}

TEST(RuntimeInfo, ThisProcessMayRunOnSomeOfTheOnlineCpus) {
  const std::vector<int> online = online_cpu_list(), mine = usable_cpu_list();
  ASSERT_FALSE(online.empty());
  ASSERT_FALSE(mine.empty());
  for (int c : mine) EXPECT_NE(std::find(online.begin(), online.end(), c), online.end()) << c;
  const int cores = physical_cores(mine);
  EXPECT_GE(cores, 1);
  EXPECT_LE(cores, int(mine.size()));
}

TEST(RuntimeInfo, APeakOfMemoryIsSeenAndARestartLeavesItOut) {
  if (!reset_peak_memory()) {
    GTEST_SKIP() << "this kernel does not let a process restart its peak (/proc/self/clear_refs)";
  }
  const double before = peak_memory_mib();
  ASSERT_TRUE(std::isfinite(before));
  {
    // 256 MiB, every page written so that it is resident.
    const std::size_t bytes = std::size_t(256) << 20;
    std::unique_ptr<char[]> block(new char[bytes]);
    std::memset(block.get(), 1, bytes);
    EXPECT_GE(peak_memory_mib(), before + 250);
    EXPECT_EQ(block[bytes - 1], 1);
  }
  const double held = peak_memory_mib();
  EXPECT_GE(held, before + 250);  // freed, the peak stays
  ASSERT_TRUE(reset_peak_memory());
  if (!kAddressSanitizer) {  // AddressSanitizer holds freed blocks back (its quarantine)
    EXPECT_LT(peak_memory_mib(), held - 200);  // the freed block handed back and left out
  }
}

// Without a GPU here, the driver look-up's ways of not knowing: no driver, a
// library that is not the driver, and the CUDA toolkit's stub of the driver
// (a real libcuda.so whose every call fails, as on a node without a GPU). The
// description itself is checked where a GPU is (tests/e2e/test_gpu.py).
TEST(RuntimeInfo, AGpuTheDriverCannotDescribeIsSaidToBeSoWithWhy) {
  const CudaDriverInfo none = cuda_driver_info(1, "libdpstudy-no-such-driver.so.1");
  EXPECT_EQ(none.device, "device 1, not described: libdpstudy-no-such-driver.so.1 could not be loaded");
  EXPECT_EQ(none.driver, "unknown");
  const CudaDriverInfo other = cuda_driver_info(0, "libz.so.1");
  EXPECT_EQ(other.device, "device 0, not described: libz.so.1 lacks the driver API");
  EXPECT_EQ(other.driver, "unknown");
  // The versions' numbers as CUDA and cuDNN count them (CUDART_VERSION, CUDNN_VERSION).
  EXPECT_EQ(cuda_version_text(13000), "13.0");
  EXPECT_EQ(cuda_version_text(12060), "12.6");
  EXPECT_EQ(cudnn_version_text(91900), "9.19.0");
  EXPECT_EQ(cudnn_version_text(90100), "9.1.0");
  EXPECT_EQ(cudnn_version_text(8907), "8.9.7");
  const std::string stub = DPSTUDY_TEST_CUDA_DRIVER_STUB;
  if (stub.empty()) GTEST_SKIP() << "no CUDA toolkit's stub libcuda.so here (DPSTUDY_TEST_CUDA_DRIVER_STUB)";
  // CUDA_ERROR_STUB_LIBRARY (34): cuInit's answer, the first call made.
  const CudaDriverInfo stubbed = cuda_driver_info(0, stub.c_str());
  EXPECT_EQ(stubbed.device, "device 0, not described: the driver answered error 34");
  EXPECT_EQ(stubbed.driver, "unknown");
}

namespace {

// The number a header #defines NAME as ("" if it does not).
std::string defined_in(const std::string& header, const std::string& name) {
  std::ifstream in(header);
  std::string word, define, value;
  for (std::string line; std::getline(in, line);) {
    std::istringstream(line) >> define >> word >> value;
    if (define == "#define" && word == name) return value;
    define.clear();
  }
  return "";
}

}  // namespace

// The versions of the CUDA libraries loaded in the process, on the toolkit's
// real libraries, which answer without a GPU: none before they are loaded (the
// core links no CUDA), then each one's own, as its header beside it says, once
// they are loaded as LibTorch's CUDA library brings them in at a GPU program's
// start (globally, which RTLD_GLOBAL stands for).
TEST(RuntimeInfo, TheCudaLibrariesLoadedTellTheirVersions) {
  const CudaLibraryVersions before = cuda_library_versions();
  EXPECT_EQ(before.runtime, "");
  EXPECT_EQ(before.cublas, "");
  EXPECT_EQ(before.cudnn, "");
  const std::string folder = DPSTUDY_TEST_CUDA_LIBRARIES;
  if (folder.empty()) GTEST_SKIP() << "no CUDA toolkit's libcudart.so here (DPSTUDY_TEST_CUDA_LIBRARIES)";
  for (const char* name : {"libcudart.so", "libcublas.so"}) {
    ASSERT_NE(dlopen((folder + "/" + name).c_str(), RTLD_NOW | RTLD_GLOBAL), nullptr) << dlerror();
  }
  const bool cudnn = dlopen((folder + "/libcudnn.so").c_str(), RTLD_NOW | RTLD_GLOBAL) != nullptr;
  const CudaLibraryVersions loaded = cuda_library_versions();
  // The headers beside the libraries' folder (lib64 or targets/<arch>/lib), or one up from a
  // multiarch folder (Debian: /usr/lib/x86_64-linux-gnu, /usr/include).
  std::string include = folder + "/../include/";
  if (!std::ifstream(include + "cuda_runtime_api.h")) include = folder + "/../../include/";
  const std::string runtime = defined_in(include + "cuda_runtime_api.h", "CUDART_VERSION");
  ASSERT_FALSE(runtime.empty()) << "no CUDART_VERSION in " << include << "cuda_runtime_api.h";
  EXPECT_EQ(loaded.runtime, cuda_version_text(std::stol(runtime)));
  const std::string cublas = include + "cublas_api.h";
  EXPECT_EQ(loaded.cublas, defined_in(cublas, "CUBLAS_VER_MAJOR") + "." + defined_in(cublas, "CUBLAS_VER_MINOR") + "." +
                               defined_in(cublas, "CUBLAS_VER_PATCH"));
  const std::string cudnn_header = include + "cudnn_version.h";
  if (cudnn && !defined_in(cudnn_header, "CUDNN_MAJOR").empty()) {
    EXPECT_EQ(loaded.cudnn, defined_in(cudnn_header, "CUDNN_MAJOR") + "." + defined_in(cudnn_header, "CUDNN_MINOR") +
                                "." + defined_in(cudnn_header, "CUDNN_PATCHLEVEL"));
  } else if (cudnn) {  // a cuDNN put among the toolkit's libraries without its headers
    EXPECT_NE(loaded.cudnn.find('.'), std::string::npos) << loaded.cudnn;
  } else {
    EXPECT_EQ(loaded.cudnn, "");
  }
}

// oneDNN's instruction sets by the values of dnnl_cpu_isa_t that mean one set in
// every version; the others by number, since they mean other sets in 2.x and 3.x.
TEST(RuntimeInfo, OneDnnsInstructionSetsAreNamedWhereTheirValueIsOneSetInEveryVersion) {
  EXPECT_EQ(onednn_instruction_set(0x7), "avx2");
  EXPECT_EQ(onednn_instruction_set(0x27), "avx512_core");
  EXPECT_EQ(onednn_instruction_set(0xe7), "avx512_core_bf16");
  EXPECT_EQ(onednn_instruction_set(0xf), "isa 0xf");  // avx512_mic in 2.x, avx2_vnni in 3.x
  // The core links no oneDNN: nothing to tell (dpstudy-unit-tests, which links LibTorch, asks it).
  if (dlsym(RTLD_DEFAULT, "dnnl_version") == nullptr) {
    EXPECT_EQ(onednn_cpu_kernels(), "");
  }
}

// The settings of a GPU's arithmetic that only the environment holds, in the `gpu`
// provenance where set; dpstudy's own CUBLAS_WORKSPACE_CONFIG of deterministic mode is none.
TEST(RuntimeInfo, TheEnvironmentsSettingsOfAGpusArithmeticAreNamedWithTheirValues) {
  const char* names[] = {"NVIDIA_TF32_OVERRIDE",       "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
                         "CUBLAS_WORKSPACE_CONFIG",    "TORCH_BLAS_PREFER_CUBLASLT",
                         "TORCH_CUDNN_V8_API_ENABLED", "TORCH_CUDNN_V8_API_DISABLED"};
  std::vector<std::pair<std::string, std::string>> saved;
  for (const char* name : names) {
    if (const char* value = std::getenv(name)) saved.emplace_back(name, value);
    unsetenv(name);
  }
  EXPECT_EQ(gpu_arithmetic_environment(true), "");
  EXPECT_EQ(gpu_arithmetic_environment(false), "");
  setenv("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", "1", 1);  // as NVIDIA's PyTorch containers set it
  EXPECT_EQ(gpu_arithmetic_environment(false), "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1");
  setenv("NVIDIA_TF32_OVERRIDE", "0", 1);
  setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", 1);
  EXPECT_EQ(gpu_arithmetic_environment(true), "NVIDIA_TF32_OVERRIDE=0, TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1");
  EXPECT_EQ(gpu_arithmetic_environment(false),
            "NVIDIA_TF32_OVERRIDE=0, TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1, CUBLAS_WORKSPACE_CONFIG=:4096:8");
  setenv("CUBLAS_WORKSPACE_CONFIG", ":16:8", 1);  // another workspace: other kernels
  EXPECT_EQ(gpu_arithmetic_environment(true),
            "NVIDIA_TF32_OVERRIDE=0, TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1, CUBLAS_WORKSPACE_CONFIG=:16:8");
  for (const char* name : names) unsetenv(name);
  setenv("TORCH_BLAS_PREFER_CUBLASLT", std::string(100, 'x').c_str(), 1);  // a text of any length: its start
  EXPECT_EQ(gpu_arithmetic_environment(true), "TORCH_BLAS_PREFER_CUBLASLT=" + std::string(32, 'x') + "...");
  setenv("TORCH_BLAS_PREFER_CUBLASLT", "1\n# BLAS: \xe9", 1);  // one line, printable ASCII
  EXPECT_EQ(gpu_arithmetic_environment(true), "TORCH_BLAS_PREFER_CUBLASLT=1?# BLAS: ?");
  unsetenv("TORCH_BLAS_PREFER_CUBLASLT");
  for (const auto& [name, value] : saved) setenv(name.c_str(), value.c_str(), 1);
}
