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
  // Crops and flips `batch` [B, C, H, W] (float, normalised) into `out`:
  // draw() then apply_drawn(), with a copy of the draws to the device that waits.
  void apply(const at::Tensor& batch, at::Tensor& out);
  // The host part: the next draws for a batch shaped as `batch`, written to
  // `to` as [3, B] (rows: y offset, x offset, flip). The Trainer sends every
  // worker's draws with its batch indices, in one copy a step (Upload).
  void draw(const at::Tensor& batch, std::int64_t* to);
  // The device part, which a CUDA graph can capture: the crops and flips that
  // `draws` [3, B] (on the batch's device) holds, into fixed buffers.
  void apply_drawn(const at::Tensor& batch, const at::Tensor& draws, at::Tensor& out);
  // The draws of the last apply(): per image, the crop offsets in [0, 2 pad]
  // and whether it was flipped (for tests).
  std::vector<std::int64_t> offsets_y() const { return draws(0); }
  std::vector<std::int64_t> offsets_x() const { return draws(1); }
  std::vector<std::int64_t> flips() const { return draws(2); }

  std::uint64_t rng_state() const { return rng_.state(); }
  void restore(std::uint64_t state) { rng_ = Rng(state); }

 private:
  Rng rng_;
  int pad_;
  std::vector<double> fill_;
  std::vector<std::int64_t> draws(int row) const;
  // Reused across batches of one size on one device: the border's value
  // [1, C, 1, 1] on the device, the padded batch. The last apply()'s draws
  // [3, B] on the host.
  at::Tensor fill_device_, padded_, applied_;
};

}  // namespace dpstudy
