// A model and one worker's copy of it. A Replica keeps all parameters in one
// flat buffer (and their gradients, momentum and floating-point buffers such as
// batch-norm statistics in three more), so that averaging, the optimiser
// update and checkpoints are one tensor operation each and allocate nothing.
#pragma once

#include <torch/nn/module.h>

#include <functional>
#include <memory>
#include <vector>

#include "dpstudy/model_factory.hpp"
#include "dpstudy/run_config.hpp"

namespace dpstudy {

// What a workload implements: a module mapping a float batch [B, C, H, W] to
// logits [B, classes]. Register parameters and buffers as usual.
class Model : public torch::nn::Module {
 public:
  virtual at::Tensor forward(const at::Tensor& x) = 0;
};

class Replica {
 public:
  // channels_last: every 4-D parameter (a convolution's weight) lies in its
  // slice of the flat buffers as [O, kH, kW, I], a channels_last tensor.
  explicit Replica(std::shared_ptr<Model> model, MemoryFormat format = MemoryFormat::contiguous);

  Model& model() { return *model_; }
  at::Tensor& params() { return params_; }     // 1-D float, every parameter
  at::Tensor& grads() { return grads_; }       // same layout: the last backward()'s gradient
  at::Tensor& momentum() { return momentum_; }  // same layout
  at::Tensor& buffers() { return buffers_; }   // floating-point buffers; may be empty
  std::int64_t parameter_count() const { return params_.numel(); }

  // The gradient of `loss` (a scalar of this replica's model) into grads().
  void backward(const at::Tensor& loss);

  // Copies parameters and buffers from another replica of the same model.
  void copy_weights_from(Replica& other);

  // Points this replica's parameters and momentum at another's, copying
  // nothing: while replicas stay identical (a synchronous step applies one mean
  // gradient) the other's update is then this one's too. Its gradients and
  // buffers stay its own. `other` must outlive the mirroring and not mirror.
  void mirror(Replica& other);
  // Back to its own storage, with the values it mirrored; nothing when it does not mirror.
  void own_weights();
  bool mirrors() const { return mirrored_ != nullptr; }

 private:
  // Points the flat parameters and momentum, and every parameter, at `params` and `momentum`.
  void point_at(const at::Tensor& params, const at::Tensor& momentum);

  std::shared_ptr<Model> model_;
  at::Tensor params_, grads_, momentum_, buffers_;
  std::vector<at::Tensor> parameters_;          // the model's, views of params_
  std::vector<at::Tensor> grad_views_;          // each parameter's slice of grads_, its shape
  at::Tensor zero_;                             // 0-dim
  at::Tensor own_params_, own_momentum_;        // this replica's storage, also while it mirrors
  const Replica* mirrored_ = nullptr;
  bool channels_last_ = false;
};

// The tensor of shape `sizes` at `offset` in the 1-D `flat`: contiguous, or
// channels_last when asked and 4-D.
at::Tensor slice_of(const at::Tensor& flat, std::int64_t offset, at::IntArrayRef sizes, bool channels_last);
// ConfigError for channels_last and a model without a 4-D parameter, in which it would change nothing.
void check_memory_format(MemoryFormat format, Model& model);

struct SgdSettings {
  OptimizerKind kind = OptimizerKind::momentum;
  double momentum = 0.9;
  double weight_decay = 0.0;
};

// One update of SGD (PyTorch's convention, no dampening):
//   g = grad + wd * p;  buf = mu * buf + g;
//   p -= lr * g (sgd), lr * buf (momentum), lr * (g + mu * buf) (nesterov).
// Works in place on the flat buffers; `grads` is overwritten. With `rate`
// defined, lr is the number that one-element tensor on the replica's device
// holds when the update runs (p -= rate * x, as PyTorch's SGD with a tensor
// lr): a CUDA graph replays the update with each step's rate.
void sgd_step(Replica& r, const SgdSettings& s, double lr, const at::Tensor& rate = {});

}  // namespace dpstudy
