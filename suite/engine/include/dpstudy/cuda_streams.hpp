// CUDA streams of dpstudy's own (docs/gpu.md#replica-streams). LibTorch's pool
// hands out its 32 streams per device round-robin to whoever asks, so two runs
// trained at once (--runs_at_once) could be given the same stream; while one
// captured a CUDA graph on it, the other's kernels would land in that graph.
// A stream taken here serves one holder until it gives it back.
#pragma once

#include <c10/core/Device.h>

#include <functional>
#include <memory>

namespace dpstudy {

// A GPU process's replicas launched side by side (--parallel workers on a
// GPU): each replica's forward and backward on a stream of its own, forked from
// the current stream and joined back into it. The kernels, their inputs and
// their order per replica are those of one stream, so the bits are too; the GPU
// may run one replica's small kernels beside another's.
class ReplicaStreams {
 public:
  // A CUDA device; elsewhere (or in a build without CUDA) an Error.
  explicit ReplicaStreams(const c10::Device& device);
  ~ReplicaStreams();  // gives the streams back once their work is done
  ReplicaStreams(const ReplicaStreams&) = delete;
  ReplicaStreams& operator=(const ReplicaStreams&) = delete;

  // Runs task(i) for i in [0, n) one after another on this thread, each
  // launching on stream i of its own. Those streams first wait for the work
  // launched so far on the current stream; the current stream then waits for
  // all of them. Nothing waits on the host, so this may run while a CUDA graph
  // captures the current stream: the fork and the join become its branches.
  void run(int n, const std::function<void(int)>& task);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// While it lives, this thread's current stream on `device` is one of
// dpstudy's own; then the previous one again. A no-op for a CPU device.
class OwnStreamGuard {
 public:
  explicit OwnStreamGuard(const c10::Device& device);
  ~OwnStreamGuard();  // gives the stream back once its work is done
  OwnStreamGuard(const OwnStreamGuard&) = delete;
  OwnStreamGuard& operator=(const OwnStreamGuard&) = delete;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dpstudy
