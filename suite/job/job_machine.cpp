// Where a job computes: its device, threads and deterministic settings, and
// what computes there (LibTorch's CPU kernels, the GPU and its libraries), as
// provenance records it.
#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/detail/CUDAHooksInterface.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "dpstudy/error.hpp"
#include "dpstudy/runtime_info.hpp"
#include "job_setup.hpp"

namespace dpstudy {

// cpu, or the GPU of this process's local rank when there is one (auto) or
// when asked (cuda, or a reproduction of a GPU run; an error without one).
at::Device resolve_device(const JobOptions& g, const StoredRun& stored, int local_rank) {
  // The name, and cuda on a build without it, were refused with the other options (command_line.cpp).
  const std::string& name = g.device;
  if (name == "cpu" || !DPSTUDY_CUDA) return at::kCPU;
  const int gpus = at::hasCUDA() ? at::detail::getCUDAHooks().getNumGPUs() : 0;
  if (gpus == 0) {
    if (name == "cuda") {
      const std::string why = "this LibTorch has no CUDA support or no GPU is visible";
      // Not asked for: the reproduced run's own device.
      if (!g.reproduce.empty() && !g.device_given) throw UsageError(no_gpu_for_reference(g.reproduce, stored, why));
      throw ConfigError("device", name, "is not available: " + why + " (use --device cpu)");
    }
    return at::kCPU;
  }
  return at::Device(at::kCUDA, at::DeviceIndex(local_rank % gpus));
}

// The CPU kernels LibTorch's own code picked, which decide the bits as the BLAS
// build decides a product's: ATen's vectorised level ("AVX2", "AVX512", "NO
// AVX", or "DEFAULT" in 2.11; by CPU kind, or ATEN_CPU_CAPABILITY) and oneDNN's
// version and instruction set (its convolutions; by CPU kind, or
// ONEDNN_MAX_CPU_ISA): "ATen AVX2, oneDNN 2.6.3 avx512_core_bf16". Runs
// reproduced here under ATEN_CPU_CAPABILITY=default, and a ResNet's under
// ONEDNN_MAX_CPU_ISA=AVX2, differed within their first steps. ATen's level from
// at::show_config(), which every LibTorch has (1.13 declares no
// at::get_cpu_capability); so is oneDNN's version where the library does not
// tell it itself (linked in with hidden symbols). "-" where none says.
std::string cpu_kernels() {
  const std::string config = at::show_config();
  // What follows `key` in show_config up to one of `ends`; "" where `key` is absent.
  const auto after = [&config](const std::string& key, const char* ends) -> std::string {
    const auto pos = config.find(key);
    if (pos == std::string::npos) return "";
    const auto from = pos + key.size();
    return config.substr(from, config.find_first_of(ends, from) - from);
  };
  std::string out;
  if (const std::string aten = after("CPU capability usage: ", "\n"); !aten.empty()) out = "ATen " + aten;
  std::string onednn = onednn_cpu_kernels();
  if (onednn.empty()) {  // "Intel(R) MKL-DNN v2.6.3 (...)" (1.13), "... (oneDNN) v3.5.3 (...)" (2.x)
    std::string built = after("MKL-DNN v", " \n");
    if (built.empty()) built = after("(oneDNN) v", " \n");
    if (!built.empty()) onednn = built + " (instruction set not told)";
  }
  if (!onednn.empty()) out += (out.empty() ? "" : ", ") + std::string("oneDNN ") + onednn;
  return out.empty() ? "-" : out;
}

// "none" on the CPU; on a GPU, the driver's description of it and the versions
// of the CUDA runtime, cuBLAS and cuDNN that compute ("NVIDIA H200, compute 9.0,
// CUDA 13.0, cuBLAS 13.1.0, cuDNN 9.19.0"): with LibTorch's version, what decides
// a GPU run's bits besides the config. Each library's version as the library
// loaded tells it; where it cannot (linked in statically), the one LibTorch was
// built with. Then the environment's settings of its arithmetic, where any is
// set ("...; NVIDIA_TF32_OVERRIDE=0"): with one stack, they decide whether
// convolutions and matrix products run in TF32. `driver`: the CUDA version the
// driver supports.
std::string gpu_identity(const at::Device& device, bool deterministic, std::string* driver) {
  *driver = "none";
  if (!device.is_cuda()) return "none";
  const CudaDriverInfo info = cuda_driver_info(device.has_index() ? device.index() : 0);
  *driver = info.driver;
  const CudaLibraryVersions loaded = cuda_library_versions();
  std::string cuda = loaded.runtime, cudnn = loaded.cudnn;
  try {
    const at::CUDAHooksInterface& hooks = at::detail::getCUDAHooks();
    if (cuda.empty()) cuda = cuda_version_text(hooks.versionCUDART());
    if (cudnn.empty() && hooks.compiledWithCuDNN()) cudnn = cudnn_version_text(hooks.versionCuDNN());
  } catch (const std::exception&) {
    if (cuda.empty()) cuda = "version not told by this LibTorch";
  }
  const std::string environment = gpu_arithmetic_environment(deterministic);
  return info.device + ", CUDA " + cuda + (loaded.cublas.empty() ? "" : ", cuBLAS " + loaded.cublas) +
         (cudnn.empty() ? "" : ", cuDNN " + cudnn) + (environment.empty() ? "" : "; " + environment);
}

// Threads per process: --threads, a reproduction's reference, or the cores
// this process may use; and how it uses them (--parallel).
void set_threads(JobOptions& g, const StoredRun& stored, const Session& session) {
  const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  // A reproduction computes as its reference did. Workers that stepped side by
  // side ran every operation on one thread: so does the reproduction, whatever
  // its threads. Operations spread over T threads (or a file older than
  // --parallel) need T again: OpenBLAS sums a long inner dimension in another
  // order with another thread count (docs/engine.md).
  const bool stored_side_by_side = stored.parallel == "workers";
  if (!g.reproduce.empty() && !g.parallel_given) {
    g.parallel = to_string(stored_side_by_side ? Parallelism::workers : Parallelism::operations);
  }
  if (!g.reproduce.empty() && !stored_side_by_side && !g.threads_given && stored.threads > 0) {
    if (stored.threads > 4 * cores) {
      throw UsageError("--reproduce: the run used " + std::to_string(stored.threads) +
                       " threads per process, more than 4 per core of the " + std::to_string(cores) +
                       " cores here; give --threads N, knowing that another thread count may change the bits");
    }
    g.threads = int(stored.threads);
  }
  if (g.threads > 0) {
    at::set_num_threads(g.threads);
  } else {
    // The cores of this node shared among its processes, so that they do not
    // oversubscribe; no more than this process may run on: Open MPI binds
    // each of up to 2 processes to one core by default. One process alone
    // takes every core it may run on (LibTorch's own default can be fewer:
    // 1 on this project's 2-core VM); its workers side by side, the bits do
    // not depend on it. Physical cores: two hardware threads of one core
    // (SMT) share its arithmetic units, and PyTorch counts so too.
    const int node_cores = physical_cores(online_cpu_list());
    const int my_cores = physical_cores(usable_cpu_list());
    at::set_num_threads(std::max(1, std::min(my_cores, node_cores / session.local_size())));
  }
  // The process's threads from here on; a Trainer with its workers side by
  // side sets LibTorch's own count to 1 while it trains.
  g.threads = at::get_num_threads();
}

// cuBLAS needs its workspace setting before its first use to be deterministic.
void set_deterministic(const at::Device& device) {
  if (device.is_cuda()) setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", 0);
  at::globalContext().setDeterministicAlgorithms(true, false);
  at::globalContext().setDeterministicCuDNN(true);
  at::globalContext().setBenchmarkCuDNN(false);
}

}  // namespace dpstudy
