#include "dpstudy/cuda_graphs.hpp"

#include <torch/version.h>

#include "dpstudy/config.hpp"
#include "dpstudy/error.hpp"

#if DPSTUDY_CUDA
#include <ATen/autocast_mode.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <map>

#include "own_streams.hpp"
#endif

namespace dpstudy {

// LibTorch 2.x can turn autocast's cache of weight casts off: a capture must not keep those casts.
#if TORCH_VERSION_MAJOR >= 2
constexpr bool kAutocastCacheSwitch = true;
#else
constexpr bool kAutocastCacheSwitch = false;
#endif

CudaGraphs parse_cuda_graphs(const std::string& text) {
  if (text == "auto") return CudaGraphs::automatic;
  if (text == "on") return CudaGraphs::on;
  if (text == "off") return CudaGraphs::off;
  throw ConfigError("cuda_graphs", text, "is not one of: auto, on, off");
}

std::string to_string(CudaGraphs g) { return g == CudaGraphs::automatic ? "auto" : g == CudaGraphs::on ? "on" : "off"; }

std::string why_not_graphed(const RunConfig& c, const c10::Device& device, int processes) {
  if (!device.is_cuda()) return "needs a CUDA device, and this run trains on the " + device.str();
  if (processes > 1) {
    return "the run's " + std::to_string(processes) +
           " processes average through MPI on the host, which a graph cannot hold (one process per run can)";
  }
  if (c.precision == Precision::bf16 && !kAutocastCacheSwitch) {
    return "bf16 needs LibTorch 2 or later here: autocast's cache must be off while a step is captured";
  }
  return {};
}

bool resolve_cuda_graphs(CudaGraphs g, const RunConfig& c, const c10::Device& device, int processes) {
  if (g == CudaGraphs::off) return false;
  const std::string why = why_not_graphed(c, device, processes);
  if (why.empty()) return true;
  if (g == CudaGraphs::on) throw ConfigError("cuda_graphs", "on", "cannot apply: " + why);
  return false;
}

#if DPSTUDY_CUDA

struct StepGraphs::Impl {
  c10::Device device;
  int warmup;
  c10::cuda::CUDAStream capture;  // where warm-up and capture run
  struct Kind {
    int eager = 0;
    std::unique_ptr<at::cuda::CUDAGraph> graph;
  };
  std::map<std::string, Kind> kinds;
  // Made once and recorded again each step, so that nothing is created while capturing.
  at::cuda::CUDAEvent enter, leave;
};

StepGraphs::StepGraphs(const c10::Device& device, int warmup) {
  if (!device.is_cuda()) throw Error("StepGraphs: needs a CUDA device, not the " + device.str());
  // A stream of dpstudy's own: a capture takes in whatever any thread launches on its stream.
  impl_.reset(new Impl{device, warmup, take_own_stream(device.index()), {}, {}, {}});
}

StepGraphs::~StepGraphs() {
  try {
    clear();
    give_back_stream(impl_->capture);
  } catch (...) {  // a CUDA error already reported by the step that caused it
  }
}

void StepGraphs::clear() {
  if (impl_->kinds.empty()) return;
  // A graph's pool goes back to the allocator when it is dropped: not while a
  // replay that writes it may still run. Replays run on the current stream,
  // warm-ups on the capture stream; the device's other streams may be other
  // runs' (--runs_at_once), one of them capturing, which a device-wide
  // synchronisation would break.
  c10::cuda::getCurrentCUDAStream(impl_->device.index()).synchronize();
  impl_->capture.synchronize();
  impl_->kinds.clear();
}

void StepGraphs::run(const std::string& key, const std::function<void()>& body) {
  Impl& m = *impl_;
  Impl::Kind& kind = m.kinds[key];
  if (kind.graph) {
    kind.graph->replay();
    return;
  }
  // The capture stream follows the current one, and the current one waits for it.
  const c10::cuda::CUDAStream current = c10::cuda::getCurrentCUDAStream(m.device.index());
  m.enter.record(current);
  m.enter.block(m.capture);
  {
    const c10::cuda::CUDAStreamGuard on_capture(m.capture);
#if TORCH_VERSION_MAJOR >= 2
    const bool cached = at::autocast::is_autocast_cache_enabled();
    at::autocast::set_autocast_cache_enabled(false);
#endif
    try {
      if (kind.eager < m.warmup) {
        body();
        ++kind.eager;
      } else {
        auto graph = std::make_unique<at::cuda::CUDAGraph>();
#if TORCH_VERSION_MAJOR >= 2
        // Thread-local: other runs of this process (--runs_at_once) go on
        // allocating and launching on their own streams while this one captures.
        graph->capture_begin({0, 0}, cudaStreamCaptureModeThreadLocal);
#else
        graph->capture_begin();
#endif
        try {
          body();
        } catch (...) {
          try {
            graph->capture_end();
          } catch (...) {  // the first error says more
          }
          throw;
        }
        graph->capture_end();
        kind.graph = std::move(graph);
        ++captures_;
      }
    } catch (...) {
#if TORCH_VERSION_MAJOR >= 2
      at::autocast::set_autocast_cache_enabled(cached);
#endif
      throw;
    }
#if TORCH_VERSION_MAJOR >= 2
    at::autocast::set_autocast_cache_enabled(cached);
#endif
  }
  m.leave.record(m.capture);
  m.leave.block(current);
  if (kind.graph) kind.graph->replay();  // a capture runs nothing: this step's work
}

#else  // a build without CUDA: no device can qualify (why_not_graphed)

struct StepGraphs::Impl {};

StepGraphs::StepGraphs(const c10::Device& device, int) {
  throw Error("StepGraphs: this dpstudy was built without CUDA (DPSTUDY_WITH_CUDA=OFF), so the " + device.str() +
              " cannot run CUDA graphs");
}

StepGraphs::~StepGraphs() = default;
void StepGraphs::clear() {}
void StepGraphs::run(const std::string&, const std::function<void()>& body) { body(); }

#endif

}  // namespace dpstudy
