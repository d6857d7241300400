#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "dpstudy/communicator.hpp"
#include "training_support.hpp"

using namespace dpstudy;
using dpstudy::test::worker_buffers;

TEST(Communicator, MeanIsTheFixedPairwiseTreeBitForBit) {
  const auto x = worker_buffers(6);
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
  const auto x = worker_buffers(8);
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
