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

std::string why_not_graphed(const RunConfig& c, const c10::Device& device) {
  if (!device.is_cuda()) return "needs a CUDA device, and this run trains on the " + device.str();
  if (c.precision == Precision::bf16 && !kAutocastCacheSwitch) {
    return "bf16 needs LibTorch 2 or later here: autocast's cache must be off while a step is captured";
  }
  return {};
}

bool resolve_cuda_graphs(CudaGraphs g, const RunConfig& c, const c10::Device& device) {
  if (g == CudaGraphs::off) return false;
  const std::string why = why_not_graphed(c, device);
  if (why.empty()) return true;
  if (g == CudaGraphs::on) throw ConfigError("cuda_graphs", "on", "cannot apply: " + why);
  return false;
}

void StepParts::on_device(std::function<void()> work) {
  if (parts_.empty() || parts_.back().host) parts_.emplace_back();
  parts_.back().device.push_back(std::move(work));
}

void StepParts::on_host(std::function<void()> work) {
  if (parts_.empty() || parts_.back().host) parts_.emplace_back();
  parts_.back().host = std::move(work);
}

void StepParts::run_device(std::size_t part) const {
  for (const auto& work : parts_.at(part).device) work();
}

void StepParts::run_host(std::size_t part) const {
  if (parts_.at(part).host) parts_[part].host();
}

void StepParts::run_eagerly() const {
  for (std::size_t i = 0; i < parts_.size(); ++i) {
    run_device(i);
    run_host(i);
  }
}

#if DPSTUDY_CUDA

struct StepGraphs::Impl {
  c10::Device device;
  int warmup;
  c10::cuda::CUDAStream capture;  // where warm-up and capture run
  struct Kind {
    int eager = 0;
    bool captured = false;
    // One per part of the step; null for a part without device work (an
    // empty capture would warn, and its replay would launch nothing).
    std::vector<std::unique_ptr<at::cuda::CUDAGraph>> graphs;
  };
  std::map<std::string, Kind> kinds;
  // Made once and recorded again each step, so that nothing is created while capturing.
  at::cuda::CUDAEvent enter, leave;
};

namespace {

// Autocast's cache of weight casts off while a step is captured (LibTorch 2.x);
// its setting back after, thrown or not.
class AutocastCacheOff {
 public:
#if TORCH_VERSION_MAJOR >= 2
  AutocastCacheOff() : was_(at::autocast::is_autocast_cache_enabled()) {
    at::autocast::set_autocast_cache_enabled(false);
  }
  ~AutocastCacheOff() { at::autocast::set_autocast_cache_enabled(was_); }
#else
  AutocastCacheOff() {}  // LibTorch 1 has no switch: bf16 runs are not graphed there (why_not_graphed)
#endif
  AutocastCacheOff(const AutocastCacheOff&) = delete;
  AutocastCacheOff& operator=(const AutocastCacheOff&) = delete;

 private:
#if TORCH_VERSION_MAJOR >= 2
  bool was_;
#endif
};

std::unique_ptr<at::cuda::CUDAGraph> capture(const StepParts& step, std::size_t part) {
  auto graph = std::make_unique<at::cuda::CUDAGraph>();
#if TORCH_VERSION_MAJOR >= 2
  // Thread-local: other runs of this process (--runs_at_once) go on
  // allocating and launching on their own streams while this one captures.
  graph->capture_begin({0, 0}, cudaStreamCaptureModeThreadLocal);
#else
  graph->capture_begin();
#endif
  try {
    step.run_device(part);
  } catch (...) {
    try {
      graph->capture_end();
    } catch (...) {  // the first error says more
    }
    throw;
  }
  graph->capture_end();
  return graph;
}

}  // namespace

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
  // warm-ups and the replays right after a capture on the capture stream; the
  // device's other streams may be other runs' (--runs_at_once), one of them
  // capturing, which a device-wide synchronisation would break.
  c10::cuda::getCurrentCUDAStream(impl_->device.index()).synchronize();
  impl_->capture.synchronize();
  impl_->kinds.clear();
}

void StepGraphs::run(const std::string& key, const StepParts& step) {
  Impl& m = *impl_;
  Impl::Kind& kind = m.kinds[key];
  if (kind.captured) {
    if (kind.graphs.size() != step.size()) {
      throw Error("StepGraphs: a step of kind " + key + " has " + std::to_string(step.size()) +
                  " parts, and its capture had " + std::to_string(kind.graphs.size()));
    }
    for (std::size_t i = 0; i < step.size(); ++i) {
      if (kind.graphs[i]) kind.graphs[i]->replay();
      step.run_host(i);
    }
    return;
  }
  // The capture stream follows the current one, and the current one waits for it.
  const c10::cuda::CUDAStream current = c10::cuda::getCurrentCUDAStream(m.device.index());
  m.enter.record(current);
  m.enter.block(m.capture);
  {
    const c10::cuda::CUDAStreamGuard on_capture(m.capture);
    const AutocastCacheOff no_cache;
    if (kind.eager < m.warmup) {
      step.run_eagerly();
      ++kind.eager;
    } else {
      // A capture runs nothing: each part's graph replays at once, this
      // step's work, before its host work reads what the part wrote.
      std::vector<std::unique_ptr<at::cuda::CUDAGraph>> graphs;
      for (std::size_t i = 0; i < step.size(); ++i) {
        graphs.push_back(step.has_device_work(i) ? capture(step, i) : nullptr);
        if (graphs.back()) {
          graphs.back()->replay();
          ++captures_;
        }
        step.run_host(i);
      }
      kind.graphs = std::move(graphs);
      kind.captured = true;
    }
  }
  m.leave.record(m.capture);
  m.leave.block(current);
}

#else  // a build without CUDA: no device can qualify (why_not_graphed)

struct StepGraphs::Impl {};

StepGraphs::StepGraphs(const c10::Device& device, int) {
  throw Error("StepGraphs: this dpstudy was built without CUDA (DPSTUDY_WITH_CUDA=OFF), so the " + device.str() +
              " cannot run CUDA graphs");
}

StepGraphs::~StepGraphs() = default;
void StepGraphs::clear() {}
void StepGraphs::run(const std::string&, const StepParts& step) { step.run_eagerly(); }

#endif

}  // namespace dpstudy
