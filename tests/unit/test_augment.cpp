// Batch augmentation: shapes, crops within the padded image, flips, the pad
// value, and determinism by (seed, worker).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <set>

#include "dpstudy/augment.hpp"

using dpstudy::Augmenter;

TEST(Augment, CropsAndFlipsMatchTheirDefinition) {
  at::manual_seed(1);
  const at::Tensor x = at::randn({64, 3, 32, 32});
  at::Tensor out = at::empty_like(x);
  Augmenter aug(7, 2, 4, {-1.0, -2.0, -3.0});
  aug.apply(x, out);
  ASSERT_EQ(out.sizes(), x.sizes());
  // The padded image as a reference: zero pixels (after normalisation, -mean/std) around x.
  at::Tensor padded = at::empty({64, 3, 40, 40});
  for (int c = 0; c < 3; ++c) padded.select(1, c).fill_(-1.0 - c);
  padded.narrow(2, 4, 32).narrow(3, 4, 32).copy_(x);
  int flipped = 0;
  std::set<std::int64_t> seen_offsets;
  for (int b = 0; b < 64; ++b) {
    const std::int64_t dy = aug.offsets_y()[b], dx = aug.offsets_x()[b];
    ASSERT_GE(dy, 0);
    ASSERT_LE(dy, 8);
    ASSERT_GE(dx, 0);
    ASSERT_LE(dx, 8);
    seen_offsets.insert(dy * 9 + dx);
    at::Tensor crop = padded[b].narrow(1, dy, 32).narrow(2, dx, 32);
    if (aug.flips()[b]) {
      crop = crop.flip({2});
      ++flipped;
    }
    ASSERT_TRUE(at::equal(out[b], crop)) << "image " << b;
  }
  EXPECT_GT(flipped, 16);  // about half of 64
  EXPECT_LT(flipped, 48);
  EXPECT_GT(seen_offsets.size(), 20u);  // of the 81 possible offsets
}

TEST(Augment, SameSeedAndWorkerSameDrawsOthersDiffer) {
  const at::Tensor x = at::randn({16, 3, 32, 32});
  at::Tensor a = at::empty_like(x), b = at::empty_like(x), c = at::empty_like(x), d = at::empty_like(x);
  Augmenter(5, 0, 4, {0, 0, 0}).apply(x, a);
  Augmenter(5, 0, 4, {0, 0, 0}).apply(x, b);
  Augmenter(5, 1, 4, {0, 0, 0}).apply(x, c);
  Augmenter(6, 0, 4, {0, 0, 0}).apply(x, d);
  EXPECT_TRUE(at::equal(a, b));
  EXPECT_FALSE(at::equal(a, c));
  EXPECT_FALSE(at::equal(a, d));
  // A restored generator continues the same stream.
  Augmenter first(5, 0, 4, {0, 0, 0}), second(9, 9, 4, {0, 0, 0});
  first.apply(x, a);
  second.restore(first.rng_state());
  first.apply(x, a);
  second.apply(x, b);
  EXPECT_TRUE(at::equal(a, b));
}

TEST(Augment, DrawsWrittenIntoAStepsBufferGiveWhatApplyGives) {
  // The Trainer's way: every worker's draws in rows of one buffer (after its
  // batch indices), sent in one copy, each worker reading a slice of it.
  const at::Tensor x = at::randn({16, 3, 32, 32});
  at::Tensor alone = at::empty_like(x), sliced = at::empty_like(x);
  Augmenter a(5, 3, 4, {-1.0, 0.5, 2.0}), b(5, 3, 4, {-1.0, 0.5, 2.0});
  at::Tensor step = at::full({2, 4, 16}, -7, at::kLong);  // [workers, indices + 3 rows of draws, batch]
  for (int round = 0; round < 2; ++round) {               // the generator moves on between batches alike
    a.apply(x, alone);
    b.draw(x, step[1].data_ptr<std::int64_t>() + 16);
    b.apply_drawn(x, step[1].narrow(0, 1, 3), sliced);
    EXPECT_TRUE(at::equal(alone, sliced)) << "round " << round;
    EXPECT_EQ(a.offsets_y(),
              std::vector<std::int64_t>(step[1][1].data_ptr<std::int64_t>(), step[1][1].data_ptr<std::int64_t>() + 16));
  }
  EXPECT_TRUE(at::equal(step[0], at::full({4, 16}, -7, at::kLong)));  // the other rows untouched
  EXPECT_TRUE(at::equal(step[1][0], at::full({16}, -7, at::kLong)));
}
