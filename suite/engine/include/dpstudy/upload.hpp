// Host values a step sends to its device (batch indices, augmentation draws)
// without waiting for the device. On a GPU the host writes into a ring of
// pinned buffers, and reuses one only after the copy from it has run (an
// event), so that a step needs no host synchronisation (docs/gpu.md, CUDA graphs).
// On the CPU the host buffer is the device tensor itself.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Event.h>

#include <memory>
#include <vector>

namespace dpstudy {

class Upload {
 public:
  Upload(std::vector<std::int64_t> sizes, at::ScalarType type, const at::Device& device, int slots = 4);
  // The host buffer to fill next; waits until the device has copied what it held before.
  const at::Tensor& host();
  // Copies the buffer host() returned to device() on the current stream, without waiting.
  const at::Tensor& send();
  // A fixed device tensor: a CUDA graph that reads it reads each send().
  const at::Tensor& device() const { return device_; }

 private:
  std::vector<at::Tensor> slots_;
  std::vector<std::unique_ptr<c10::Event>> copied_;  // per slot; none on the CPU
  at::Tensor device_;
  std::size_t next_ = 0;
};

}  // namespace dpstudy
