// Training-data augmentation on whole batches: random crops of a zero-padded
// image (zero in pixel space) and horizontal flips, done with one gather, no
// per-image loop. Offsets and flips come from each worker's own generator,
// seeded from (run seed, worker index), so results do not depend on the
// process layout.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "dpstudy/rng.hpp"

namespace dpstudy {

class Augmenter {
 public:
  // `pad` pixels on each side (4 for CIFAR); `fill` is the per-channel value
  // of a zero pixel after normalisation (-mean / std).
  Augmenter(std::uint64_t seed, int worker, int pad, std::vector<double> fill);
  // Crops and flips `batch` [B, C, H, W] (float, normalised) into `out`.
  void apply(const at::Tensor& batch, at::Tensor& out);
  // The draws of the last apply(): per image, the crop offsets in [0, 2 pad]
  // and whether it was flipped (for tests).
  const std::vector<std::int64_t>& offsets_y() const { return dy_; }
  const std::vector<std::int64_t>& offsets_x() const { return dx_; }
  const std::vector<std::int64_t>& flips() const { return flip_; }

  std::uint64_t rng_state() const { return rng_.state(); }
  void restore(std::uint64_t state) { rng_ = Rng(state); }

 private:
  Rng rng_;
  int pad_;
  std::vector<double> fill_;
  std::vector<std::int64_t> dy_, dx_, flip_;
  at::Tensor padded_;  // reused across batches
};

}  // namespace dpstudy
