#include "dpstudy/device_memory.hpp"

#include <limits>

#include "dpstudy/config.hpp"

#if DPSTUDY_CUDA
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

}  // namespace dpstudy
