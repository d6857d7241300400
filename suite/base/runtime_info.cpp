#include "dpstudy/runtime_info.hpp"

#include <torch/version.h>

#include <dlfcn.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>  // malloc_trim
#endif

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>

#include "dpstudy/config.hpp"
#if DPSTUDY_WITH_MPI
#include <mpi.h>
#endif

namespace dpstudy {
namespace {

// Asks the library that provides sgemm_ (already loaded: RTLD_NOLOAD) for its
// version string, by each known library's own entry point.
std::string blas_build(const char* library) {
  void* handle = dlopen(library, RTLD_LAZY | RTLD_NOLOAD);
  if (!handle) return "-";
  std::string text = "-";
  if (auto openblas = reinterpret_cast<const char* (*)()>(dlsym(handle, "openblas_get_config"))) {
    if (const char* c = openblas()) text = c;
  } else if (auto mkl = reinterpret_cast<void (*)(char*, int)>(dlsym(handle, "mkl_get_version_string"))) {
    char buf[256] = {};
    mkl(buf, int(sizeof buf));
    text = buf;
  } else if (auto blis = reinterpret_cast<const char* (*)()>(dlsym(handle, "bli_info_get_version_str"))) {
    if (const char* c = blis()) text = std::string("BLIS ") + c;
  }
  dlclose(handle);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\n')) text.pop_back();
  return text.empty() ? "-" : text;
}

}  // namespace

std::string cuda_version_text(long v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

std::string cudnn_version_text(long v) {
  const bool nine = v >= 10000;  // cuDNN 9 counts minor versions by 100: 91900 is 9.19.0; 8907 was 8.9.7
  const long major = nine ? v / 10000 : v / 1000, minor = nine ? v % 10000 / 100 : v % 1000 / 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(v % 100);
}

CudaDriverInfo cuda_driver_info(int ordinal, const char* library) {
  CudaDriverInfo info;
  const std::string unknown = "device " + std::to_string(ordinal) + ", not described: ";
  void* handle = dlopen(library, RTLD_LAZY | RTLD_LOCAL);
  if (!handle) {
    info.device = unknown + library + " could not be loaded";
    return info;
  }
  // The driver API's C signatures (cuda.h), stable since CUDA 2: CUresult and
  // CUdevice are int, the attribute an enum of int's size.
  using Init = int (*)(unsigned);
  using Version = int (*)(int*);
  using Get = int (*)(int*, int);
  using Name = int (*)(char*, int, int);
  using Attribute = int (*)(int*, int, int);
  const auto init = reinterpret_cast<Init>(dlsym(handle, "cuInit"));
  const auto version = reinterpret_cast<Version>(dlsym(handle, "cuDriverGetVersion"));
  const auto get = reinterpret_cast<Get>(dlsym(handle, "cuDeviceGet"));
  const auto name = reinterpret_cast<Name>(dlsym(handle, "cuDeviceGetName"));
  const auto attribute = reinterpret_cast<Attribute>(dlsym(handle, "cuDeviceGetAttribute"));
  if (!init || !version || !get || !name || !attribute) {
    dlclose(handle);
    info.device = unknown + library + " lacks the driver API";
    return info;
  }
  // Left loaded once initialised: the CUDA runtime uses the same driver, and
  // unloading an initialised driver is not something it expects.
  int status = init(0), driver = 0, device = 0, major = 0, minor = 0;
  if (status == 0 && (status = version(&driver)) == 0) info.driver = cuda_version_text(driver);
  char text[256] = {};
  if (status != 0 || (status = get(&device, ordinal)) != 0 ||
      (status = name(text, int(sizeof text) - 1, device)) != 0 ||
      (status = attribute(&major, 75, device)) != 0 ||  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
      (status = attribute(&minor, 76, device)) != 0) {  // ..._MINOR
    info.device = unknown + "the driver answered error " + std::to_string(status);
    return info;
  }
  info.device = std::string(text) + ", compute " + std::to_string(major) + "." + std::to_string(minor);
  return info;
}

CudaLibraryVersions cuda_library_versions() {
  // RTLD_DEFAULT: the libraries LibTorch's CUDA library was linked with, loaded
  // with it at the program's start. Signatures as in cuda_runtime_api.h, cublas_api.h
  // and cudnn.h (cudaError_t, cublasStatus_t and libraryPropertyType are int-sized enums).
  CudaLibraryVersions v;
  if (const auto runtime = reinterpret_cast<int (*)(int*)>(dlsym(RTLD_DEFAULT, "cudaRuntimeGetVersion"))) {
    int version = 0;
    if (runtime(&version) == 0) v.runtime = cuda_version_text(version);
  }
  if (const auto property = reinterpret_cast<int (*)(int, int*)>(dlsym(RTLD_DEFAULT, "cublasGetProperty"))) {
    int major = 0, minor = 0, patch = 0;  // MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL: 0, 1, 2
    if (property(0, &major) == 0 && property(1, &minor) == 0 && property(2, &patch) == 0) {
      v.cublas = std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
    }
  }
  if (const auto cudnn = reinterpret_cast<std::size_t (*)()>(dlsym(RTLD_DEFAULT, "cudnnGetVersion"))) {
    v.cudnn = cudnn_version_text(long(cudnn()));
  }
  return v;
}

std::string gpu_arithmetic_environment(bool deterministic) {
  static const char* const names[] = {"NVIDIA_TF32_OVERRIDE",       "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
                                      "CUBLAS_WORKSPACE_CONFIG",    "TORCH_BLAS_PREFER_CUBLASLT",
                                      "TORCH_CUDNN_V8_API_ENABLED", "TORCH_CUDNN_V8_API_DISABLED"};
  std::string out;
  for (const char* name : names) {
    const char* value = std::getenv(name);
    if (value == nullptr) continue;
    if (deterministic && std::string(name) == "CUBLAS_WORKSPACE_CONFIG" && std::string(value) == ":4096:8") continue;
    // A value of any length would make a provenance text of any length: its first 32 bytes
    // tell it, printable ASCII (a line break or another encoding's bytes would break the
    // `# GPU:` line and texts that h5py decodes as UTF-8).
    std::string text(value, std::min<std::size_t>(std::strlen(value), 32));
    for (char& c : text) c = c >= 0x20 && c < 0x7f ? c : '?';
    if (std::strlen(value) > 32) text += "...";
    out += (out.empty() ? "" : ", ") + std::string(name) + "=" + text;
  }
  return out;
}

std::string onednn_instruction_set(int isa) {
  // dnnl_cpu_isa_t's values that mean one set in every oneDNN from 1.x to 3.x; the
  // others (0xf was avx512_mic in 2.x and avx2_vnni in 3.x) by number.
  static const std::pair<int, const char*> names[] = {{0x1, "sse41"},
                                                      {0x3, "avx"},
                                                      {0x7, "avx2"},
                                                      {0x27, "avx512_core"},
                                                      {0x67, "avx512_core_vnni"},
                                                      {0xe7, "avx512_core_bf16"}};
  for (const auto& [value, name] : names) {
    if (value == isa) return name;
  }
  char hex[16];
  std::snprintf(hex, sizeof hex, "isa 0x%x", unsigned(isa));
  return hex;
}

std::string onednn_cpu_kernels() {
  // As dnnl.h declares them; dnnl_version_t begins with three ints in every version.
  struct Version {
    int major, minor, patch;
  };
  const auto version = reinterpret_cast<const Version* (*)()>(dlsym(RTLD_DEFAULT, "dnnl_version"));
  const auto isa = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "dnnl_get_effective_cpu_isa"));
  if (!version || !isa) return "";
  const Version* v = version();
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch) + " " +
         onednn_instruction_set(isa());
}

BlasInfo blas_info() {
  // Ask the dynamic linker which library provides sgemm_, the routine LibTorch's
  // CPU matrix products call. Debian's libblas.so.3 is an alternative that may be
  // the slow reference BLAS even when OpenBLAS is also loaded; realpath shows the
  // library it resolves to. A LibTorch linked statically against MKL (the PyTorch
  // wheels, Spack's py-torch +mkl) provides the symbol itself.
  BlasInfo info;
  void* sym = dlsym(RTLD_DEFAULT, "sgemm_");
  Dl_info where{};
  if (!sym || !dladdr(sym, &where) || !where.dli_fname) {
    info.library = "-";
    info.kind = "none found (sgemm_ not exported; LibTorch uses its own kernels)";
    return info;
  }
  char resolved[PATH_MAX];
  info.library = realpath(where.dli_fname, resolved) ? resolved : where.dli_fname;
  info.build = blas_build(where.dli_fname);
  const std::string& l = info.library;
  auto has = [&l](const char* s) { return l.find(s) != std::string::npos; };
  // The library's own version string first: Debian's OpenBLAS libblas.so.3 put
  // first on LD_LIBRARY_PATH has no "openblas" in its path.
  const std::string& b = info.build;
  const bool openblas = b.rfind("OpenBLAS", 0) == 0 || (b == "-" && has("openblas"));
  if (openblas) {
    const bool openmp = b.find("USE_OPENMP") != std::string::npos || has("openmp");
    info.kind = openmp ? "OpenBLAS (OpenMP)" : has("pthread") ? "OpenBLAS (pthreads)" : "OpenBLAS";
  } else if (b.find("Math Kernel Library") != std::string::npos || has("mkl")) {
    info.kind = "MKL";
  } else if (b.rfind("BLIS", 0) == 0 || has("blis")) {
    info.kind = "BLIS";
  } else if (has("torch")) {
    info.kind = "built into LibTorch";
  } else if (has("libblas")) {
    info.kind = "reference BLAS";
    info.slow = true;
  } else {
    info.kind = "unknown";
  }
  return info;
}

std::string torch_version() { return TORCH_VERSION; }

std::string software_stack() { return "LibTorch " + torch_version() + ", " + blas_info().build; }

std::string executable_path() {
  char exe[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  return n > 0 ? std::string(exe, std::size_t(n)) : std::string();
}

std::string installed_share_dir() {
  std::string dir = executable_path();
  if (dir.empty()) return "";
  // <prefix>/bin/dpstudy-x -> <prefix>; a workload's engine is one folder deeper,
  // <prefix>/libexec/dpstudy/dpstudy-x-engine (workload.hpp).
  const bool engine = dir.size() > 7 && dir.compare(dir.size() - 7, 7, "-engine") == 0;
  for (int up = 0; up < (engine ? 3 : 2); ++up) {
    const auto slash = dir.rfind('/');
    if (slash == std::string::npos) return "";
    dir.resize(slash);
  }
  const std::string share = dir + "/share/dpstudy";
  struct stat st {};
  return stat(share.c_str(), &st) == 0 && S_ISDIR(st.st_mode) ? share : "";
}

std::string mpi_library_version() {
#if DPSTUDY_WITH_MPI
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(text, &len);  // one of the few calls allowed before MPI_Init
  std::string v(text, std::size_t(len));
  const auto nl = v.find_first_of(",\n");
  return nl == std::string::npos ? v : v.substr(0, nl);
#else
  return "none (built without MPI)";
#endif
}

bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"}) {
    if (std::getenv(v)) return true;
  }
  return false;
}

std::string host_name() {
  char host[256] = "";
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') return "unknown";
  host[sizeof host - 1] = '\0';
  return host;
}

std::vector<int> usable_cpu_list() {
  std::vector<int> out;
#ifdef __linux__
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) out.push_back(c);
    }
  }
#endif
  if (out.empty()) out = online_cpu_list();
  return out;
}

std::vector<int> online_cpu_list() {
  // "0-3,8-11": ranges and single CPUs, comma separated.
  std::vector<int> out;
  std::ifstream in("/sys/devices/system/cpu/online");
  std::string text;
  std::getline(in, text);
  std::istringstream items(text);
  std::string item;
  while (std::getline(items, item, ',')) {
    const std::size_t dash = item.find('-');
    const int first = std::atoi(item.c_str()), last = dash == std::string::npos ? first : std::atoi(item.c_str() + dash + 1);
    for (int c = first; c <= last && !item.empty(); ++c) out.push_back(c);
  }
  if (out.empty()) {
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    for (int c = 0; c < std::max(1L, n); ++c) out.push_back(c);
  }
  return out;
}

int physical_cores(const std::vector<int>& cpus, const std::string& sysfs) {
  std::set<std::pair<long, long>> cores;
  for (int c : cpus) {
    const std::string dir = sysfs + "/cpu" + std::to_string(c) + "/topology/";
    std::ifstream core(dir + "core_id"), package(dir + "physical_package_id");
    long core_id = -1, package_id = -1;
    if (!(core >> core_id) || !(package >> package_id)) return int(cpus.size());
    cores.emplace(package_id, core_id);
  }
  return std::max(1, int(cores.size()));
}

double peak_memory_mib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    long kib = -1;
    if (std::sscanf(line.c_str(), "VmHWM: %ld kB", &kib) == 1 && kib >= 0) return double(kib) / 1024;
  }
  return std::nan("");
}

bool reset_peak_memory() {
#ifdef __GLIBC__
  ::malloc_trim(0);
#endif
  // "5" resets the peak resident size (Linux 4.0 and later).
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return bool(out);
}

}  // namespace dpstudy
