// Whole-step CUDA graphs (docs/gpu.md, "CUDA graphs"): which runs may have
// their steps captured once and replayed, and the class that does it. A
// replay launches the same kernels with the same arguments in the same order
// per replica as the eager step, so the bits are the same.
#pragma once

#include <c10/core/Device.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dpstudy/run_config.hpp"

namespace dpstudy {

enum class CudaGraphs { automatic, on, off };
CudaGraphs parse_cuda_graphs(const std::string& text);  // auto | on | off; ConfigError otherwise
std::string to_string(CudaGraphs g);

// Why the steps of `config` on `device` cannot be captured; empty when they can.
std::string why_not_graphed(const RunConfig& config, const c10::Device& device);
// Whether such a run uses graphs: `auto` where it qualifies; `on` where it
// does not is a ConfigError that gives the reason.
bool resolve_cuda_graphs(CudaGraphs g, const RunConfig& config, const c10::Device& device);

// One step's work, in parts: each part's device work, then its host work (an
// averaging through MPI between the run's processes, which a graph cannot
// hold). A run in one process has one part with no host work.
class StepParts {
 public:
  // Added to the last part's device work, or a new part's after host work.
  void on_device(std::function<void()> work);
  // Ends the last part (a new one, when it has host work already).
  void on_host(std::function<void()> work);
  std::size_t size() const { return parts_.size(); }
  bool has_device_work(std::size_t part) const { return !parts_.at(part).device.empty(); }
  void run_device(std::size_t part) const;
  void run_host(std::size_t part) const;  // nothing when the part has no host work
  void run_eagerly() const;               // every part's device work, then its host work, in turn

 private:
  struct Part {
    std::vector<std::function<void()>> device;
    std::function<void()> host;
  };
  std::vector<Part> parts_;
};

// A Trainer's steps, a graph per part of each kind of step (CUDA builds only;
// elsewhere the constructor throws). Each graph has a memory pool of its own.
class StepGraphs {
 public:
  // `warmup`: eager steps of a kind, on the capture stream, before its capture.
  explicit StepGraphs(const c10::Device& device, int warmup = 2);
  ~StepGraphs();
  StepGraphs(const StepGraphs&) = delete;
  StepGraphs& operator=(const StepGraphs&) = delete;

  // Runs one step of kind `key`: eager for the kind's first `warmup` steps;
  // then each part's device work captured (which runs nothing) and replayed,
  // and replayed from then on, its host work eager after each replay. Device
  // work must not wait for the device, and must do the same work with the
  // same tensors each time: the host state it reads belongs in `key`.
  void run(const std::string& key, const StepParts& step);
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
