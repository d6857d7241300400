#include "dpstudy/cuda_streams.hpp"

#include "dpstudy/config.hpp"
#include "dpstudy/error.hpp"

#if DPSTUDY_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>

#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "own_streams.hpp"
#endif

namespace dpstudy {

#if DPSTUDY_CUDA

namespace {

struct FreeStreams {
  std::mutex lock;
  std::map<c10::DeviceIndex, std::vector<cudaStream_t>> streams;
};

// Never destroyed: a stream may be given back during static destruction.
FreeStreams& free_streams() {
  static auto* f = new FreeStreams;
  return *f;
}

}  // namespace

c10::cuda::CUDAStream take_own_stream(c10::DeviceIndex device) {
  if (device < 0) device = c10::cuda::current_device();  // a device named "cuda", without its index
  FreeStreams& f = free_streams();
  {
    const std::lock_guard<std::mutex> hold(f.lock);
    std::vector<cudaStream_t>& free = f.streams[device];
    if (!free.empty()) {
      const cudaStream_t s = free.back();
      free.pop_back();
      return c10::cuda::getStreamFromExternal(s, device);
    }
  }
  // Kept for the process's life once made: LibTorch's caching allocator
  // remembers blocks by stream, and a destroyed stream's handle may come back.
  const c10::cuda::CUDAGuard on(device);
  cudaStream_t s = nullptr;
  C10_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return c10::cuda::getStreamFromExternal(s, device);
}

void give_back_stream(const c10::cuda::CUDAStream& stream) {
  stream.synchronize();
  FreeStreams& f = free_streams();
  const std::lock_guard<std::mutex> hold(f.lock);
  f.streams[stream.device_index()].push_back(stream.stream());
}

struct ReplicaStreams::Impl {
  c10::Device device;
  // Made once and recorded again each step, so that nothing is created while a
  // graph captures.
  at::cuda::CUDAEvent fork;
  std::vector<at::cuda::CUDAEvent> joined;
  std::vector<c10::cuda::CUDAStream> streams;
};

ReplicaStreams::ReplicaStreams(const c10::Device& device) {
  if (!device.is_cuda()) throw Error("ReplicaStreams: needs a CUDA device, not the " + device.str());
  impl_.reset(new Impl{device, {}, {}, {}});
}

ReplicaStreams::~ReplicaStreams() {
  try {
    for (const auto& s : impl_->streams) give_back_stream(s);
  } catch (...) {  // a CUDA error already reported by the step that caused it
  }
}

void ReplicaStreams::run(int n, const std::function<void(int)>& task) {
  Impl& m = *impl_;
  while (int(m.streams.size()) < n) {
    m.streams.push_back(take_own_stream(m.device.index()));
    m.joined.emplace_back();
  }
  const c10::cuda::CUDAStream current = c10::cuda::getCurrentCUDAStream(m.device.index());
  m.fork.record(current);
  for (int i = 0; i < n; ++i) {
    const auto s = std::size_t(i);
    m.fork.block(m.streams[s]);
    {
      const c10::cuda::CUDAStreamGuard on_own(m.streams[s]);
      task(i);
    }
    m.joined[s].record(m.streams[s]);
  }
  for (int i = 0; i < n; ++i) m.joined[std::size_t(i)].block(current);
}

struct OwnStreamGuard::Impl {
  std::optional<c10::cuda::CUDAStream> stream;
  std::optional<c10::cuda::CUDAStreamGuard> current;
};

OwnStreamGuard::OwnStreamGuard(const c10::Device& device) : impl_(new Impl) {
  if (!device.is_cuda()) return;
  impl_->stream = take_own_stream(device.index());
  impl_->current.emplace(*impl_->stream);
}

OwnStreamGuard::~OwnStreamGuard() {
  if (!impl_->stream) return;
  impl_->current.reset();
  try {
    give_back_stream(*impl_->stream);
  } catch (...) {  // a CUDA error already reported by the work that caused it
  }
}

#else  // a build without CUDA: no GPU runs, and resolve_parallelism never asks for streams

struct ReplicaStreams::Impl {};

ReplicaStreams::ReplicaStreams(const c10::Device& device) {
  throw Error("ReplicaStreams: this dpstudy was built without CUDA (DPSTUDY_WITH_CUDA=OFF), so the " + device.str() +
              " has no CUDA streams");
}

ReplicaStreams::~ReplicaStreams() = default;

void ReplicaStreams::run(int n, const std::function<void(int)>& task) {
  for (int i = 0; i < n; ++i) task(i);
}

struct OwnStreamGuard::Impl {};

OwnStreamGuard::OwnStreamGuard(const c10::Device& device) {
  if (device.is_cuda()) {
    throw Error("OwnStreamGuard: this dpstudy was built without CUDA (DPSTUDY_WITH_CUDA=OFF): no " + device.str());
  }
}

OwnStreamGuard::~OwnStreamGuard() = default;

#endif

}  // namespace dpstudy
