// A GPU's memory as this process's LibTorch allocator holds it: what several
// runs sharing one GPU must fit in (docs/gpu.md, "Runs per GPU").
#pragma once

#include <c10/core/Device.h>

namespace dpstudy {

// Starts the peak over from what the allocator holds now; false where there
// is none to measure (the CPU, a build without CUDA).
bool reset_peak_device_memory(const c10::Device& device);
// The most memory LibTorch's caching allocator has reserved on `device`
// since the last reset, MiB; NaN where unknown. The CUDA context, a few
// hundred MiB per process, is not in it.
double peak_device_memory_mib(const c10::Device& device);

}  // namespace dpstudy
