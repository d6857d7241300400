#include "dpstudy/replica.hpp"

#include <ATen/ATen.h>

#include "dpstudy/error.hpp"

namespace dpstudy {

at::Tensor slice_of(const at::Tensor& flat, std::int64_t offset, at::IntArrayRef sizes, bool channels_last) {
  std::int64_t n = 1;
  for (const std::int64_t s : sizes) n *= s;
  const at::Tensor slice = flat.narrow(0, offset, n);
  if (!channels_last || sizes.size() != 4) return slice.view(sizes);
  // [N, C, H, W] over memory laid out as [N, H, W, C]: strides (HWC, 1, WC, C).
  return slice.view({sizes[0], sizes[2], sizes[3], sizes[1]}).permute({0, 3, 1, 2});
}

namespace {

// Moves each tensor's data into a slice of one new flat buffer and returns it.
at::Tensor flatten_into_one(std::vector<at::Tensor> tensors, const at::TensorOptions& options, bool channels_last) {
  std::int64_t total = 0;
  for (const auto& t : tensors) total += t.numel();
  at::Tensor flat = at::empty({total}, options);
  std::int64_t offset = 0;
  for (auto& t : tensors) {
    at::Tensor view = slice_of(flat, offset, t.sizes(), channels_last);
    view.copy_(t.detach());
    t.set_data(view);
    offset += t.numel();
  }
  return flat;
}

// p -= lr * x: the rate a number, or a tensor read when the kernel runs.
void descend(at::Tensor& p, const at::Tensor& x, double lr, const at::Tensor& rate) {
  if (rate.defined()) {
    p.addcmul_(x, rate, -1);
  } else {
    p.add_(x, -lr);
  }
}

}  // namespace

Replica::Replica(std::shared_ptr<Model> model, MemoryFormat format)
    : model_(std::move(model)), channels_last_(format == MemoryFormat::channels_last) {
  std::vector<at::Tensor> params = model_->parameters();
  const at::TensorOptions options = params.empty() ? at::TensorOptions(at::kFloat) : params[0].options();
  params_ = flatten_into_one(params, options.requires_grad(false), channels_last_);
  grads_ = at::zeros_like(params_);
  momentum_ = at::zeros_like(params_);
  zero_ = at::zeros({}, params_.options());
  std::int64_t offset = 0;
  for (auto& p : params) {
    grad_views_.push_back(slice_of(grads_, offset, p.sizes(), channels_last_));
    offset += p.numel();
  }
  std::vector<at::Tensor> floating;
  for (const auto& b : model_->buffers()) {
    if (at::isFloatingType(b.scalar_type())) floating.push_back(b);
  }
  buffers_ = flatten_into_one(floating, options.requires_grad(false), false);
  parameters_ = std::move(params);
  // Other tensors on the same storage: set_data on params_ while mirroring leaves them here.
  own_params_ = params_.view({-1});
  own_momentum_ = momentum_.view({-1});
}

void Replica::backward(const at::Tensor& loss) {
  // Autograd hands each parameter its gradient when its .grad() is undefined,
  // and adds into it when defined: one copy into grads_ then replaces zeroing
  // grads_ and an addition (2 passes over the gradients, not 4). The copy adds
  // +0 so that the bits are those of 0 + g, as when autograd added into zeros:
  // a -0 reads +0.
  for (auto& p : parameters_) p.mutable_grad().reset();
  loss.backward();
  const at::NoGradGuard no_grad;
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    at::Tensor& g = parameters_[i].mutable_grad();
    if (g.defined()) {
      at::add_out(grad_views_[i], g, zero_);
    } else {  // not part of this loss
      grad_views_[i].zero_();
    }
    g.reset();  // its memory back now, not at the next step
  }
}

void Replica::copy_weights_from(Replica& other) {
  own_weights();
  params_.copy_(other.params_);
  if (buffers_.numel() > 0) buffers_.copy_(other.buffers_);
}

void Replica::point_at(const at::Tensor& params, const at::Tensor& momentum) {
  // set_data changes what these tensors (and every copy of them, such as the
  // Trainer's and the model's) refer to.
  params_.set_data(params);
  momentum_.set_data(momentum);
  std::int64_t offset = 0;
  for (auto& p : parameters_) {
    p.set_data(slice_of(params, offset, p.sizes(), channels_last_));
    offset += p.numel();
  }
}

void Replica::mirror(Replica& other) {
  if (mirrored_ == &other) return;
  if (other.mirrors() || &other == this) throw Error("Replica::mirror: the replica mirrored must hold its own weights");
  own_weights();
  point_at(other.params_, other.momentum_);
  mirrored_ = &other;
}

void Replica::own_weights() {
  if (!mirrored_) return;
  const at::NoGradGuard no_grad;
  own_params_.copy_(params_);
  own_momentum_.copy_(momentum_);
  point_at(own_params_, own_momentum_);
  mirrored_ = nullptr;
}

void check_memory_format(MemoryFormat format, Model& model) {
  if (format != MemoryFormat::channels_last) return;
  for (const auto& p : model.parameters()) {
    if (p.dim() == 4) return;
  }
  throw ConfigError("memory_format", "channels_last",
                    "needs a model with convolutions (4-D weights), and this one has none: use contiguous");
}

void sgd_step(Replica& r, const SgdSettings& s, double lr, const at::Tensor& rate) {
  at::NoGradGuard no_grad;
  at::Tensor& p = r.params();
  at::Tensor& g = r.grads();
  if (s.weight_decay != 0) g.add_(p, s.weight_decay);
  if (s.kind == OptimizerKind::sgd || s.momentum == 0) {
    descend(p, g, lr, rate);
    return;
  }
  at::Tensor& buf = r.momentum();
  buf.mul_(s.momentum).add_(g);
  if (s.kind == OptimizerKind::nesterov) {
    g.add_(buf, s.momentum);
    descend(p, g, lr, rate);
  } else {
    descend(p, buf, lr, rate);
  }
}

}  // namespace dpstudy
