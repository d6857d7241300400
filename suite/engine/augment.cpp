#include "dpstudy/augment.hpp"

#include <ATen/ATen.h>

namespace dpstudy {

namespace {
constexpr std::uint64_t kAugmentStream = 3ull << 32;  // apart from the samplers' streams
}

Augmenter::Augmenter(std::uint64_t seed, int worker, int pad, std::vector<double> fill)
    : rng_(Rng::stream(seed, kAugmentStream + std::uint64_t(worker))), pad_(pad), fill_(std::move(fill)) {}

void Augmenter::apply(const at::Tensor& batch, at::Tensor& out) {
  const std::int64_t b = batch.size(0);
  if (!applied_.defined() || applied_.size(1) != b) applied_ = at::empty({3, b}, at::kLong);
  draw(batch, applied_.data_ptr<std::int64_t>());
  apply_drawn(batch, applied_.to(batch.device()), out);
}

void Augmenter::draw(const at::Tensor& batch, std::int64_t* to) {
  const std::int64_t b = batch.size(0), c = batch.size(1), h = batch.size(2), w = batch.size(3);
  // Here, not in apply_drawn(): a graph's capture must not allocate its buffers.
  if (!padded_.defined() || padded_.sizes() != at::IntArrayRef{b, c, h + 2 * pad_, w + 2 * pad_} ||
      padded_.device() != batch.device()) {
    padded_ = at::empty({b, c, h + 2 * pad_, w + 2 * pad_}, batch.options());
    fill_device_ = at::tensor(std::vector<float>(fill_.begin(), fill_.end())).to(batch.device()).view({1, c, 1, 1});
  }
  for (std::int64_t i = 0; i < b; ++i) {
    to[i] = std::int64_t(rng_.below(std::uint64_t(2 * pad_ + 1)));
    to[b + i] = std::int64_t(rng_.below(std::uint64_t(2 * pad_ + 1)));
    to[2 * b + i] = std::int64_t(rng_.below(2));
  }
}

void Augmenter::apply_drawn(const at::Tensor& batch, const at::Tensor& draws, at::Tensor& out) {
  const std::int64_t b = batch.size(0), c = batch.size(1), h = batch.size(2), w = batch.size(3);
  const auto options = at::TensorOptions(at::kLong).device(batch.device());
  // A zero pixel is `fill` after normalisation: the border takes it, the middle the batch as it is.
  at::Tensor& padded = padded_;
  padded.copy_(fill_device_.expand_as(padded));
  padded.narrow(2, pad_, h).narrow(3, pad_, w).copy_(batch);
  const at::Tensor oy = draws.select(0, 0).view({b, 1, 1, 1});
  const at::Tensor ox = draws.select(0, 1).view({b, 1, 1, 1});
  const at::Tensor fl = draws.select(0, 2).view({b, 1, 1, 1});
  const at::Tensor rows = (at::arange(h, options).view({1, 1, h, 1}) + oy).expand({b, c, h, w + 2 * pad_});
  const at::Tensor j = at::arange(w, options).view({1, 1, 1, w});
  // A flip reads the crop's columns backwards: both in one gather.
  const at::Tensor cols = (ox + at::where(fl.eq(1), (w - 1) - j, j)).expand({b, c, h, w});
  at::gather_out(out, padded.gather(2, rows), 3, cols);
}

std::vector<std::int64_t> Augmenter::draws(int row) const {
  if (!applied_.defined()) return {};
  const at::Tensor r = applied_.select(0, row);
  const std::int64_t* p = r.data_ptr<std::int64_t>();
  return {p, p + r.numel()};
}

}  // namespace dpstudy
