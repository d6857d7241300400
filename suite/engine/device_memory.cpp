#include "dpstudy/device_memory.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "dpstudy/config.hpp"

#if DPSTUDY_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace dpstudy {

bool reset_peak_device_memory(const c10::Device& device) {
#if DPSTUDY_CUDA
  if (device.is_cuda()) {
    c10::cuda::CUDACachingAllocator::resetPeakStats(device.index());
    return true;
  }
#endif
  (void)device;
  return false;
}

double peak_device_memory_mib(const c10::Device& device) {
#if DPSTUDY_CUDA
  if (device.is_cuda()) {
    // reserved_bytes[0]: the aggregate over the allocator's pools, CUDA graphs' pools included.
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
    return double(stats.reserved_bytes[0].peak) / (1024.0 * 1024.0);
  }
#endif
  (void)device;
  return std::numeric_limits<double>::quiet_NaN();
}

double device_memory_mib(const c10::Device& device) {
#if DPSTUDY_CUDA
  if (device.is_cuda())
    return double(at::cuda::getDeviceProperties(device.index())->totalGlobalMem) / (1024.0 * 1024.0);
#endif
  (void)device;
  return std::numeric_limits<double>::quiet_NaN();
}

int processes_per_gpu(int node_processes, int gpus) {
  return std::max(1, (node_processes + std::max(1, gpus) - 1) / std::max(1, gpus));
}

int runs_that_fit(double device_mib, int processes, double peak_mib) {
  if (!(device_mib > 0) || !(peak_mib > 0) || processes < 1) return 1;
  const double mine = kSafeFraction * device_mib / processes - kContextMib;
  return int(std::clamp(std::floor(mine / peak_mib), 1.0, double(kMostRunsAtOnce)));
}

}  // namespace dpstudy
