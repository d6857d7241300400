// The engine's CUDA side of cuda_streams.hpp (CUDA builds only).
#pragma once

#include <c10/cuda/CUDAStream.h>

namespace dpstudy {

// A stream of `device` that nothing else in the process launches on until it
// is given back: one given back before, or a new non-blocking one.
c10::cuda::CUDAStream take_own_stream(c10::DeviceIndex device);
// Waits for the work launched on `stream`, then lets the next taker have it.
void give_back_stream(const c10::cuda::CUDAStream& stream);

}  // namespace dpstudy
