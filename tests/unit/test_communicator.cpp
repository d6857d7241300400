#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "dpstudy/communicator.hpp"

using namespace dpstudy;

namespace {
std::vector<at::Tensor> buffers(int n) {
  at::manual_seed(3);
  std::vector<at::Tensor> v;
  for (int i = 0; i < n; ++i) v.push_back(at::randn({1001}) * std::pow(10.0, i % 4));
  return v;
}
}  // namespace

TEST(Communicator, MeanIsTheFixedPairwiseTreeBitForBit) {
  const auto x = buffers(6);
  InProcessCommunicator comm(6);
  EXPECT_FALSE(comm.mean_needs_host());  // a CUDA graph may hold its mean
  at::Tensor mean = at::empty({1001});
  comm.mean(x, 0, 6, mean);
  // sum(0,6) = sum(0,3) + sum(3,6); sum(0,3) = x0 + (x1 + x2).
  const at::Tensor expected = ((x[0] + (x[1] + x[2])) + (x[3] + (x[4] + x[5]))) / 6.0;
  EXPECT_TRUE(at::equal(mean, expected));
  // A left-to-right sum rounds differently somewhere: the order is what makes it reproducible.
  const at::Tensor sequential = (((((x[0] + x[1]) + x[2]) + x[3]) + x[4]) + x[5]) / 6.0;
  EXPECT_TRUE(at::allclose(mean, sequential, 1e-5, 1e-4));
  EXPECT_FALSE(at::equal(mean, sequential));
}

TEST(Communicator, PowerOfTwoTreeAndSubRanges) {
  const auto x = buffers(8);
  InProcessCommunicator comm(8);
  at::Tensor mean = at::empty({1001});
  comm.mean(x, 0, 8, mean);
  EXPECT_TRUE(at::equal(mean, (((x[0] + x[1]) + (x[2] + x[3])) + ((x[4] + x[5]) + (x[6] + x[7]))) / 8.0));
  comm.mean(x, 4, 2, mean);  // a group
  EXPECT_TRUE(at::equal(mean, (x[4] + x[5]) / 2.0));
  comm.mean(x, 3, 1, mean);
  EXPECT_TRUE(at::equal(mean, x[3]));
  EXPECT_ANY_THROW(comm.mean(x, 6, 4, mean));
}
