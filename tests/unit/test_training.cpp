// The engine against independent references: a plain LibTorch training loop
// (torch::optim::SGD) on the same batches, and the engine itself run twice.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "dpstudy/error.hpp"

#include "training_support.hpp"

using namespace dpstudy;
using namespace dpstudy::test;

namespace {

// The reference: one model, built first under the run seed as the engine's
// initial model is, trained with torch::optim::SGD on batches from `next_batch`.
at::Tensor plain_sgd(const RunConfig& c, std::int64_t steps,
                     const std::function<at::Tensor()>& next_batch) {
  torch::manual_seed(c.seed);
  auto model = tiny()();
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(c.lr)
                                                 .momentum(c.optimizer == OptimizerKind::sgd ? 0.0 : c.momentum)
                                                 .nesterov(c.optimizer == OptimizerKind::nesterov)
                                                 .weight_decay(c.weight_decay));
  for (std::int64_t s = 0; s < steps; ++s) {
    const at::Tensor idx = next_batch();
    const at::Tensor loss = torch::nn::functional::cross_entropy(model->forward(data().train_x.index_select(0, idx)),
                                                                 data().train_y.index_select(0, idx));
    opt.zero_grad();
    loss.backward();
    opt.step();
  }
  std::vector<at::Tensor> flat;
  for (const auto& p : model->parameters()) flat.push_back(p.detach().flatten());
  return torch::cat(flat);
}

at::Tensor next_indices(ShardSampler& s, std::int64_t b) {
  at::Tensor idx = at::empty({b}, at::kLong);
  s.next(idx.data_ptr<std::int64_t>(), b);
  return idx;
}

}  // namespace

TEST(Training, OneWorkerMatchesAPlainSgdLoopBitForBit) {
  for (OptimizerKind kind : {OptimizerKind::sgd, OptimizerKind::momentum, OptimizerKind::nesterov}) {
    RunConfig c = base_config();
    c.optimizer = kind;
    InProcessCommunicator comm(1);
    Trainer t(c, tiny(), data(), comm);
    ASSERT_EQ(t.steps_per_epoch(), 30);
    for (std::int64_t s = 0; s < t.total_steps(); ++s) t.step();
    ShardSampler sampler(t.shard_of(0), c.seed, 0);
    const at::Tensor reference = plain_sgd(c, t.total_steps(), [&] { return next_indices(sampler, c.batch_size); });
    EXPECT_TRUE(at::equal(t.replica(0).params(), reference)) << to_string(kind) << ": max difference "
        << (t.replica(0).params() - reference).abs().max().item<double>();
  }
}

TEST(Training, SynchronousWorkersMatchOneModelOnTheConcatenatedBatch) {
  RunConfig c = base_config();
  c.workers = 4;
  c.batch_size = 8;
  InProcessCommunicator comm(4);
  Trainer t(c, tiny(), data(), comm);
  for (std::int64_t s = 0; s < t.total_steps(); ++s) {
    t.step();
    // Identical replicas mirror the first (its weights are theirs: equal by construction).
    for (int w = 1; w < 4; ++w) ASSERT_TRUE(t.replica(w).mirrors()) << "step " << s;
  }
  std::vector<ShardSampler> samplers;
  for (int w = 0; w < 4; ++w) samplers.emplace_back(t.shard_of(w), c.seed, w);
  RunConfig one = c;
  one.batch_size = 32;
  const at::Tensor reference = plain_sgd(one, t.total_steps(), [&] {
    std::vector<at::Tensor> parts;
    for (auto& s : samplers) parts.push_back(next_indices(s, c.batch_size));
    return at::cat(parts);
  });
  EXPECT_TRUE(at::allclose(t.replica(0).params(), reference, 1e-4, 1e-6))
      << "max difference " << (t.replica(0).params() - reference).abs().max().item<double>();
}

TEST(Training, WithoutAveragingEachWorkerIsAnIndependentRunOnItsShard) {
  RunConfig c = base_config();
  c.workers = 3;
  c.sync_period = kNever;
  c.overlap = 0.5;
  InProcessCommunicator comm(3);
  Trainer t(c, tiny(), data(), comm);
  for (std::int64_t s = 0; s < t.total_steps(); ++s) t.step();
  for (int w = 0; w < 3; ++w) {
    ShardSampler sampler(t.shard_of(w), c.seed, w);
    const at::Tensor reference = plain_sgd(c, t.total_steps(), [&] { return next_indices(sampler, c.batch_size); });
    EXPECT_TRUE(at::equal(t.replica(w).params(), reference)) << "worker " << w;
  }
  EXPECT_FALSE(at::equal(t.replica(0).params(), t.replica(1).params()));
}

TEST(Training, LocalSgdAveragesEveryHStepsAndGroupsWithinGroups) {
  RunConfig c = base_config();
  c.workers = 4;
  c.sync_period = 6;
  c.group_size = 2;
  c.group_sync_period = 2;
  InProcessCommunicator comm(4);
  Trainer t(c, tiny(), data(), comm);
  for (int s = 1; s <= 6; ++s) {
    t.step();
    const bool groups_equal = at::equal(t.replica(0).params(), t.replica(1).params()) &&
                              at::equal(t.replica(2).params(), t.replica(3).params());
    const bool all_equal = groups_equal && at::equal(t.replica(0).params(), t.replica(2).params());
    EXPECT_EQ(groups_equal, s % 2 == 0) << "step " << s;
    EXPECT_EQ(all_equal, s == 6) << "step " << s;
  }
  const RunResult r = t.run();
  ASSERT_GE(r.syncs.step.size(), 2u);
  EXPECT_EQ(r.syncs.level[0], 1);
  EXPECT_GT(r.syncs.divergence[0], 0.0);
}

TEST(Training, PostLocalSgdIsSynchronousUntilTheSwitchEpoch) {
  RunConfig c = base_config();
  c.workers = 2;
  c.epochs = 2;
  c.sync_period = 5;
  c.local_sgd_from_epoch = 1;
  InProcessCommunicator comm(2);
  Trainer t(c, tiny(), data(), comm);
  for (std::int64_t s = 1; s <= t.steps_per_epoch() + 1; ++s) {
    t.step();
    EXPECT_EQ(at::equal(t.replica(0).params(), t.replica(1).params()), s <= t.steps_per_epoch()) << "step " << s;
    EXPECT_EQ(t.replica(1).mirrors(), s <= t.steps_per_epoch()) << "step " << s;
  }
}

TEST(Training, SameSeedSameBitsOtherSeedOtherBits) {
  RunConfig c = base_config();
  c.workers = 4;
  c.sync_period = 3;
  c.overlap = 0.25;
  c.validation_fraction = 0.1;
  c.eval_every = 5;
  auto run = [&](std::uint64_t seed) {
    RunConfig k = c;
    k.seed = seed;
    InProcessCommunicator comm(4);
    return train_run(k, tiny(), data(), comm);
  };
  const RunResult a = run(7), b = run(7), other = run(8);
  EXPECT_EQ(a.train.loss, b.train.loss);
  EXPECT_EQ(a.train.lr, b.train.lr);
  EXPECT_EQ(a.train.samples, b.train.samples);
  EXPECT_EQ(a.train.comm_bytes, b.train.comm_bytes);
  EXPECT_EQ(a.eval.test_loss, b.eval.test_loss);
  EXPECT_EQ(a.eval.test_accuracy, b.eval.test_accuracy);
  EXPECT_EQ(a.eval.val_loss, b.eval.val_loss);
  EXPECT_EQ(a.eval.worker_divergence, b.eval.worker_divergence);
  EXPECT_EQ(a.syncs.divergence, b.syncs.divergence);
  EXPECT_NE(a.train.loss, other.train.loss);
  EXPECT_NE(a.eval.test_loss, other.eval.test_loss);
  // 432 training samples after the 10 % validation split, W b = 64: 6 steps; evaluations at 5 and 6.
  EXPECT_EQ(a.eval.step, (std::vector<std::int64_t>{5, 6}));
  EXPECT_EQ(a.train.step.size(), 6u);
}

TEST(Training, ALossThatIsNotFiniteEndsTheRunAsDiverged) {
  RunConfig c = base_config();
  c.lr = 1e6;
  InProcessCommunicator comm(1);
  const RunResult r = train_run(c, tiny(), data(), comm);
  EXPECT_EQ(r.summary.status, RunStatus::diverged);
  EXPECT_LT(r.summary.steps, 30);
  EXPECT_FALSE(std::isfinite(r.train.loss.back()));
}

TEST(Training, BatchLargerThanTheDataIsAConfigError) {
  RunConfig c = base_config();
  c.workers = 8;
  c.batch_size = 100;
  InProcessCommunicator comm(8);
  try {
    Trainer t(c, tiny(), data(), comm);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--batch_size: '100' is too large: workers x batch_size = 800 exceeds the 480"),
              std::string::npos) << e.what();
  }
}

TEST(Training, MomentumAndBatchNormStatisticsAreAveragedAsConfigured) {
  for (bool average : {false, true}) {
    RunConfig c = base_config();
    c.workers = 2;
    c.sync_period = 3;
    c.average_momentum = average;
    c.average_buffers = average;
    InProcessCommunicator comm(2);
    Trainer t(c, [] { return std::make_shared<TinyBn>(); }, data(), comm);
    EXPECT_EQ(t.replica(0).buffers().numel(), 32);  // running mean and variance
    for (int s = 0; s < 3; ++s) t.step();
    EXPECT_TRUE(at::equal(t.replica(0).params(), t.replica(1).params()));
    EXPECT_EQ(at::equal(t.replica(0).momentum(), t.replica(1).momentum()), average);
    EXPECT_EQ(at::equal(t.replica(0).buffers(), t.replica(1).buffers()), average);
    // The running statistics really live in the flat buffer the engine averages.
    EXPECT_EQ(t.replica(0).buffers().data_ptr<float>(),
              t.replica(0).model().named_buffers()["bn.running_mean"].data_ptr<float>());
  }
}

// The host reads losses every read_every steps (on a GPU, so that a step need
// not wait for the device): the series, syncs and evaluations keep every bit,
// a divergence ends the run at the same step, and a checkpoint taken between
// reads resumes to the same end.
TEST(Training, ReadingTheLossesEveryKStepsKeepsEveryBit) {
  // Bit for bit, so that a NaN equals a NaN of the same bits.
  auto bits = [](const std::vector<double>& v) {
    std::vector<std::uint64_t> out(v.size());
    if (!v.empty()) std::memcpy(out.data(), v.data(), v.size() * sizeof(double));
    return out;
  };
  auto same = [&](const RunResult& a, const RunResult& b, const std::string& what) {
    EXPECT_EQ(a.summary.status, b.summary.status) << what;
    EXPECT_EQ(a.summary.steps, b.summary.steps) << what;
    EXPECT_EQ(a.train.step, b.train.step) << what;
    EXPECT_EQ(bits(a.train.loss), bits(b.train.loss)) << what;
    EXPECT_EQ(bits(a.train.worker_loss), bits(b.train.worker_loss)) << what;
    EXPECT_EQ(a.train.lr, b.train.lr) << what;
    EXPECT_EQ(a.train.comm_bytes, b.train.comm_bytes) << what;
    EXPECT_EQ(a.syncs.step, b.syncs.step) << what;
    EXPECT_EQ(a.syncs.level, b.syncs.level) << what;
    EXPECT_EQ(bits(a.syncs.divergence), bits(b.syncs.divergence)) << what;
    EXPECT_EQ(a.eval.step, b.eval.step) << what;
    EXPECT_EQ(a.eval.train_loss, b.eval.train_loss) << what;
    EXPECT_EQ(a.eval.val_loss, b.eval.val_loss) << what;
    EXPECT_EQ(a.eval.test_loss, b.eval.test_loss) << what;
    EXPECT_EQ(a.eval.worker_divergence, b.eval.worker_divergence) << what;
  };
  RunConfig c = base_config();
  c.workers = 4;
  c.batch_size = 8;
  c.epochs = 2;
  c.sync_period = 4;
  c.group_size = 2;
  c.group_sync_period = 2;
  c.validation_fraction = 0.1;
  c.eval_every = 5;
  auto run = [&](const RunConfig& k, int read_every, const CheckpointPolicy& policy = {}) {
    InProcessCommunicator comm(k.workers);
    Trainer t(k, tiny(), data(), comm, Execution{Parallelism::automatic, 0, read_every});
    return t.run(nullptr, policy);
  };
  const RunResult every = run(c, 1);
  ASSERT_EQ(every.summary.status, RunStatus::completed);
  ASSERT_GE(every.syncs.step.size(), 10u);
  same(every, run(c, 7), "read every 7 steps");
  same(every, run(c, 1000), "read at evaluations only");

  test::ScratchDir dir;
  const std::string ckpt = dir.str() + "/run.ckpt.h5";
  same(every, run(c, 7, CheckpointPolicy{ckpt, 0, 9}), "checkpointed every 9 steps");
  {
    InProcessCommunicator comm(4);
    Trainer resumed(c, tiny(), data(), comm, Execution{Parallelism::automatic, 0, 3});
    resumed.restore_checkpoint(ckpt);
    EXPECT_GT(resumed.current_step(), 0);
    same(every, resumed.run(), "resumed from the last checkpoint");
  }

  RunConfig wild = c;
  wild.lr = 1e6;
  wild.eval_every = 0;
  const RunResult diverged = run(wild, 1);
  ASSERT_EQ(diverged.summary.status, RunStatus::diverged);
  same(diverged, run(wild, 16), "diverged, read every 16 steps");
}

// On a GPU the updates read the rate from a device tensor that each step
// refills when the schedule moves it (so that a CUDA graph replays any
// schedule). The CPU takes the GPU's way when asked: the run follows the
// schedule as closely as with the rate a number (the product rounds once
// more), its bits are its own twice, and a resumed run refills the rate.
TEST(Training, ARateOnTheDeviceFollowsTheScheduleStepByStep) {
  RunConfig c = base_config();
  c.workers = 2;
  c.batch_size = 8;
  c.epochs = 2;
  c.sync_period = 3;
  c.lr = 0.2;
  c.schedule = LrSchedule::cosine;  // 0.2 down to 0 over the run, after a warm-up from 0
  c.warmup_epochs = 0.5;
  c.warmup_start = WarmupStart::zero;
  auto run = [&](bool on_device, const std::string& resume_from = "", const CheckpointPolicy& policy = {}) {
    InProcessCommunicator comm(c.workers);
    Execution e;
    e.rate_on_device = on_device;
    Trainer t(c, tiny(), data(), comm, e);
    if (!resume_from.empty()) t.restore_checkpoint(resume_from);
    const RunResult r = t.run(nullptr, policy);
    EXPECT_EQ(r.summary.status, RunStatus::completed);
    return t.replica(0).params().clone();
  };
  const at::Tensor number = run(false), tensor = run(true);
  EXPECT_TRUE(at::allclose(tensor, number, 1e-4, 1e-6))
      << "max difference " << (tensor - number).abs().max().item<double>();
  EXPECT_TRUE(at::equal(run(true), tensor));
  test::ScratchDir dir;
  const std::string ckpt = dir.str() + "/run.ckpt.h5";
  EXPECT_TRUE(at::equal(run(true, "", CheckpointPolicy{ckpt, 0, 25}), tensor));
  EXPECT_TRUE(at::equal(run(true, ckpt), tensor));
}
