// Training-data augmentation on whole batches: random crops of a zero-padded
// image (zero in pixel space) and horizontal flips, done with one gather, no
// per-image loop. Offsets and flips come from each worker's own generator,
// seeded from (run seed, worker index), so results do not depend on the
// process layout.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "dpstudy/rng.hpp"
#include "dpstudy/upload.hpp"

namespace dpstudy {

class Augmenter {
 public:
  // `pad` pixels on each side (4 for CIFAR); `fill` is the per-channel value
  // of a zero pixel after normalisation (-mean / std).
  Augmenter(std::uint64_t seed, int worker, int pad, std::vector<double> fill);
  // Crops and flips `batch` [B, C, H, W] (float, normalised) into `out`:
  // draw() then apply_drawn().
  void apply(const at::Tensor& batch, at::Tensor& out) {
    draw(batch);
    apply_drawn(batch, out);
  }
  // The host part: the next draws for a batch shaped as `batch`, sent to the
  // device in one copy that does not wait (Upload).
  void draw(const at::Tensor& batch);
  // The device part, which a CUDA graph can capture: the crops and flips of
  // the last draw(), from fixed buffers.
  void apply_drawn(const at::Tensor& batch, at::Tensor& out);
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
  // Reused across batches of one size on one device: the draws [3, B] (rows
  // y offset, x offset, flip), the border's value [1, C, 1, 1] on the device,
  // the padded batch.
  std::unique_ptr<Upload> draws_;
  at::Tensor fill_device_, padded_;
};

}  // namespace dpstudy
