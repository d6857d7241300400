// Whole-step CUDA graphs (docs/gpu.md, "CUDA graphs"): which runs may have
// their steps captured once and replayed, and the class that does it. A
// replay launches the same kernels with the same arguments in the same order
// per replica as the eager step, so the bits are the same.
#pragma once

#include <c10/core/Device.h>

#include <functional>
#include <memory>
#include <string>

#include "dpstudy/run_config.hpp"

namespace dpstudy {

enum class CudaGraphs { automatic, on, off };
CudaGraphs parse_cuda_graphs(const std::string& text);  // auto | on | off; ConfigError otherwise
std::string to_string(CudaGraphs g);

// Why the steps of `config` on `device`, its workers spread over `processes`,
// cannot be captured; empty when they can.
std::string why_not_graphed(const RunConfig& config, const c10::Device& device, int processes);
// Whether such a run uses graphs: `auto` where it qualifies; `on` where it
// does not is a ConfigError that gives the reason.
bool resolve_cuda_graphs(CudaGraphs g, const RunConfig& config, const c10::Device& device, int processes);

// A Trainer's steps, one graph per kind of step (CUDA builds only; elsewhere
// the constructor throws). Each graph has a memory pool of its own.
class StepGraphs {
 public:
  // `warmup`: eager steps of a kind, on the capture stream, before its capture.
  explicit StepGraphs(const c10::Device& device, int warmup = 2);
  ~StepGraphs();
  StepGraphs(const StepGraphs&) = delete;
  StepGraphs& operator=(const StepGraphs&) = delete;

  // Runs the device work of one step of kind `key`: eager for the kind's
  // first `warmup` steps, then captured (which runs nothing) and replayed, and
  // replayed from then on. `body` must not wait for the device, and must do
  // the same work with the same tensors each time: the host state it reads
  // belongs in `key`.
  void run(const std::string& key, const std::function<void()>& body);
  // Drops every graph (a checkpoint's restore replaced the tensors they hold).
  void clear();
  // Graphs captured so far, over the run (provenance and tests).
  int captures() const { return captures_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int captures_ = 0;
};

}  // namespace dpstudy
