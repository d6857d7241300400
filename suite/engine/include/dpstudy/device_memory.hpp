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
// The device's whole memory, MiB; NaN where unknown (the CPU).
double device_memory_mib(const c10::Device& device);

// The processes of a node that share one GPU, process r training on
// cuda:(r mod gpus): the most any GPU gets, at least 1.
int processes_per_gpu(int node_processes, int gpus);

// --runs_at_once auto on a GPU: how many runs of `peak_mib` each fit at once
// in a process that shares a GPU of `device_mib` with `processes` - 1 others.
// Each process keeps kContextMib for its CUDA context and cuBLAS workspaces,
// and all of them together kSafeFraction of the memory: runs of a study
// differ (a larger batch, a wider model) and the allocator fragments. At
// least 1, at most kMostRunsAtOnce.
constexpr double kSafeFraction = 0.8, kContextMib = 512;
constexpr int kMostRunsAtOnce = 64;
int runs_that_fit(double device_mib, int processes, double peak_mib);

}  // namespace dpstudy
