// --precision and --memory_format: what is refused where, and the bits each gives.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "dpstudy/error.hpp"
#include "dpstudy/precision.hpp"

#include "training_support.hpp"

using namespace dpstudy;
using namespace dpstudy::test;

// --precision (docs/engine.md, "Precision"): tf32 is refused off a GPU, and bf16
// on a CPU without bfloat16 instructions; where the CPU has them, bf16 trains
// under autocast with float32 weights, gradients and momentum, the same bits
// twice and other bits than fp32.
TEST(Precision, Tf32IsRefusedOffAGpu) {
  try {
    check_precision(Precision::tf32, at::kCPU);
    FAIL() << "tf32 on the CPU was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("NVIDIA GPUs' matrix units"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(check_precision(Precision::fp32, at::kCPU));
}

TEST(Precision, AScopeTurnsThisThreadsAutocastOnAndBackOff) {
  const at::Tensor x = at::ones({2, 3}), w = at::ones({4, 3});
  EXPECT_EQ(at::linear(x, w).scalar_type(), at::kFloat);
  {
    const PrecisionScope scope(Precision::bf16, at::kCPU);
    EXPECT_EQ(at::linear(x, w).scalar_type(), at::kBFloat16);
    {
      const PrecisionScope inner(Precision::fp32, at::kCPU);  // fp32 changes nothing
      EXPECT_EQ(at::linear(x, w).scalar_type(), at::kBFloat16);
    }
  }
  EXPECT_EQ(at::linear(x, w).scalar_type(), at::kFloat);
}

TEST(Precision, Bf16TrainsWithFloat32WeightsWhereTheCpuHasBf16) {
  if (!cpu_has_bf16()) {
    EXPECT_THROW(check_precision(Precision::bf16, at::kCPU), ConfigError);
    GTEST_SKIP() << "this CPU has no bfloat16 instructions: bf16 is refused (checked), not trained";
  }
  RunConfig c = base_config();
  c.workers = 2;
  c.sync_period = 2;
  auto run = [&](Precision p) {
    RunConfig k = c;
    k.precision = p;
    InProcessCommunicator comm(2);
    Trainer t(k, tiny(), data(), comm);
    RunResult r = t.run();
    EXPECT_EQ(t.replica(0).params().scalar_type(), at::kFloat);
    EXPECT_EQ(t.replica(0).momentum().scalar_type(), at::kFloat);
    return r;
  };
  const RunResult a = run(Precision::bf16), b = run(Precision::bf16), fp32 = run(Precision::fp32);
  expect_same_bits(a, b, "bf16 twice");
  EXPECT_NE(a.train.loss, fp32.train.loss);
  for (std::size_t i = 0; i < a.train.loss.size(); ++i) {
    EXPECT_TRUE(std::isfinite(a.train.loss[i]));
    EXPECT_NEAR(a.train.loss[i], fp32.train.loss[i], 0.05) << "step " << i;  // bfloat16 keeps 8 bits
  }
}

// --memory_format channels_last: each convolution's weight lies in the flat
// buffers as [O, kH, kW, I], also while a replica mirrors another, and the
// inputs go in as channels_last. The weights start as the contiguous run's;
// the run gives its own bits the same each time, resumes to them from a
// checkpoint, and is close to the contiguous run. A model without
// convolutions refuses it.
TEST(MemoryFormat, ChannelsLastKeepsItsLayoutBitsAndCheckpoints) {
  auto cnn = [] { return std::make_shared<TwoConvs>(); };
  torch::manual_seed(3);
  Replica last(cnn(), MemoryFormat::channels_last);
  torch::manual_seed(3);
  Replica plain(cnn(), MemoryFormat::contiguous);
  const at::Tensor w = last.model().parameters()[2];  // second.weight [4, 4, 3, 3]
  ASSERT_EQ(w.dim(), 4);
  EXPECT_TRUE(w.is_contiguous(at::MemoryFormat::ChannelsLast));
  EXPECT_FALSE(w.is_contiguous());
  EXPECT_TRUE(at::equal(w, plain.model().parameters()[2]));
  EXPECT_FALSE(at::equal(last.params(), plain.params()));  // the same values, another order
  Replica other(cnn(), MemoryFormat::channels_last);
  other.mirror(last);
  EXPECT_TRUE(other.model().parameters()[2].is_contiguous(at::MemoryFormat::ChannelsLast));
  EXPECT_EQ(other.model().parameters()[2].data_ptr(), w.data_ptr());

  RunConfig c = base_config();
  c.workers = 2;
  c.sync_period = 3;
  c.epochs = 2;
  c.eval_every = 7;
  c.memory_format = MemoryFormat::channels_last;
  auto run = [&](const RunConfig& k, const CheckpointPolicy& policy = {}) {
    InProcessCommunicator comm(2);
    Trainer t(k, cnn, data(), comm);
    return t.run(nullptr, policy);
  };
  const RunResult a = run(c), b = run(c);
  ASSERT_EQ(a.summary.status, RunStatus::completed);
  EXPECT_EQ(a.train.loss, b.train.loss);
  EXPECT_EQ(a.eval.test_loss, b.eval.test_loss);
  EXPECT_EQ(a.syncs.divergence, b.syncs.divergence);
  RunConfig contiguous = c;
  contiguous.memory_format = MemoryFormat::contiguous;
  const RunResult p = run(contiguous);
  EXPECT_NEAR(a.train.loss[0], p.train.loss[0], 1e-5 * p.train.loss[0]);  // the same weights and batch
  EXPECT_NEAR(a.eval.test_loss.back(), p.eval.test_loss.back(), 0.05 * p.eval.test_loss.back());

  test::ScratchDir dir;
  const std::string ckpt = dir.str() + "/run.ckpt.h5";
  (void)run(c, CheckpointPolicy{ckpt, 0, 10});
  InProcessCommunicator comm(2);
  Trainer resumed(c, cnn, data(), comm);
  resumed.restore_checkpoint(ckpt);
  ASSERT_GT(resumed.current_step(), 0);
  EXPECT_TRUE(resumed.replica(1).model().parameters()[2].is_contiguous(at::MemoryFormat::ChannelsLast));
  EXPECT_FALSE(resumed.replica(1).model().parameters()[2].is_contiguous());
  const RunResult r = resumed.run();
  EXPECT_EQ(r.train.loss, a.train.loss);
  EXPECT_EQ(r.eval.test_loss, a.eval.test_loss);

  RunConfig mlp = base_config();
  mlp.memory_format = MemoryFormat::channels_last;
  InProcessCommunicator one(1);
  try {
    Trainer refused(mlp, tiny(), data(), one);
    ADD_FAILURE() << "channels_last for a model without convolutions was not refused";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--memory_format: 'channels_last' needs a model with convolutions"),
              std::string::npos)
        << e.what();
  }
}
