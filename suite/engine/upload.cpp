#include "dpstudy/upload.hpp"

#include <ATen/ATen.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include <thread>

namespace dpstudy {

Upload::Upload(std::vector<std::int64_t> sizes, at::ScalarType type, const at::Device& device, int slots) {
  device_ = at::empty(sizes, at::TensorOptions(type).device(device));
  if (device.is_cpu()) {
    slots_.push_back(device_);
    return;
  }
  for (int i = 0; i < slots; ++i) {
    slots_.push_back(at::empty(sizes, at::TensorOptions(type)).pin_memory());
    copied_.push_back(std::make_unique<c10::Event>(device.type()));
  }
}

const at::Tensor& Upload::host() {
  if (!copied_.empty()) {
    // An event never recorded counts as done. The wait is for a copy queued
    // slots_.size() uses ago: the device is that far behind the host at most.
    const c10::Event& done = *copied_[next_];
    while (!done.query()) std::this_thread::yield();
  }
  return slots_[next_];
}

const at::Tensor& Upload::send() {
  if (copied_.empty()) return device_;
  device_.copy_(slots_[next_], /*non_blocking=*/true);
  const c10::impl::VirtualGuardImpl guard(device_.device().type());
  copied_[next_]->record(guard.getStream(device_.device()));
  next_ = (next_ + 1) % slots_.size();
  return device_;
}

}  // namespace dpstudy
