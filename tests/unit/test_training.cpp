// The engine against independent references: a plain LibTorch training loop
// (torch::optim::SGD) on the same batches, and the engine itself run twice.
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <cmath>
#include <cstring>
#include <set>

#include "dpstudy/config.hpp"
#include "dpstudy/cuda_graphs.hpp"
#include "dpstudy/cuda_streams.hpp"
#include "dpstudy/dataset.hpp"
#include "dpstudy/device_memory.hpp"
#include "dpstudy/error.hpp"
#include "dpstudy/fixtures.hpp"
#include "dpstudy/precision.hpp"
#include "dpstudy/trainer.hpp"
#include "test_support.hpp"

using namespace dpstudy;

namespace {

struct TinyMlp : Model {
  TinyMlp() : fc1(register_module("fc1", torch::nn::Linear(784, 32))), fc2(register_module("fc2", torch::nn::Linear(32, 10))) {}
  at::Tensor forward(const at::Tensor& x) override { return fc2(torch::relu(fc1(x.flatten(1)))); }
  torch::nn::Linear fc1, fc2;
};

ModelFactory tiny() {
  return [] { return std::make_shared<TinyMlp>(); };
}

// Small fixture data, made once for the whole test program.
const TrainingData& data() {
  static test::ScratchDir dir;
  static const TrainingData d = [] {
    write_fixtures(dir.str(), {480, 100, 11, false});
    return prepare_data(load_dataset("mnist", Split::train, {dir.str()}),
                        load_dataset("mnist", Split::test, {dir.str()}));
  }();
  return d;
}

RunConfig base_config() {
  RunConfig c;
  c.dataset = "mnist";
  c.workers = 1;
  c.batch_size = 16;
  c.lr = 0.05;
  c.optimizer = OptimizerKind::momentum;
  c.momentum = 0.9;
  c.weight_decay = 1e-3;
  c.epochs = 1;
  c.seed = 7;
  return c;
}

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

// A model whose gradient is its input: w * x, and a parameter no loss uses.
struct Scale : Model {
  Scale() : w(register_parameter("w", torch::ones({3}))), unused(register_parameter("unused", torch::ones({2}))) {}
  at::Tensor forward(const at::Tensor& x) override { return w * x; }
  at::Tensor w, unused;
};

TEST(Replica, BackwardLeavesEachLossGradientAfreshWithTheBitsOfZeroPlusTheGradient) {
  Replica r(std::make_shared<Scale>());
  r.grads().fill_(5);
  r.backward(r.model().forward(torch::tensor({-0.0f, -2.0f, 3.0f})).sum());
  const at::Tensor expected = torch::tensor({0.0f, -2.0f, 3.0f, 0.0f, 0.0f});
  EXPECT_TRUE(at::equal(r.grads(), expected)) << r.grads();
  EXPECT_FALSE(std::signbit(r.grads()[0].item<float>()));  // 0 + -0 is +0: the bits autograd's addition gave
  r.backward(r.model().forward(torch::tensor({1.0f, 1.0f, 1.0f})).sum());
  EXPECT_TRUE(at::equal(r.grads(), torch::tensor({1.0f, 1.0f, 1.0f, 0.0f, 0.0f})));  // not added to the last
  for (const auto& p : r.model().parameters()) EXPECT_FALSE(p.grad().defined());  // no second copy kept
}

TEST(Replica, AMirrorSharesTheWeightsUpdatesAndMomentumButNotTheGradientsUntilItOwnsThemAgain) {
  torch::manual_seed(3);
  Replica a(std::make_shared<TinyMlp>()), b(std::make_shared<TinyMlp>());
  const at::Tensor b_before = b.params().clone();
  const SgdSettings sgd{OptimizerKind::momentum, 0.9, 0.0};
  const at::Tensor x = data().train_x.narrow(0, 0, 8), y = data().train_y.narrow(0, 0, 8);
  auto backward = [&](Replica& r) { r.backward(at::cross_entropy_loss(r.model().forward(x), y)); };

  b.mirror(a);
  ASSERT_TRUE(b.mirrors());
  EXPECT_TRUE(at::equal(b.params(), a.params()));
  backward(a);
  sgd_step(a, sgd, 0.1);  // a's update is b's
  EXPECT_TRUE(at::equal(b.params(), a.params()));
  EXPECT_TRUE(at::equal(b.momentum(), a.momentum()));
  EXPECT_GT(b.momentum().abs().sum().item<double>(), 0.0);
  // b's forward runs on a's weights; its backward fills b's gradients only.
  backward(a);
  const at::Tensor a_grads = a.grads().clone();
  backward(b);
  EXPECT_TRUE(at::equal(a.grads(), a_grads));
  EXPECT_TRUE(at::equal(b.grads(), a_grads));  // the same weights on the same batch
  EXPECT_THROW(a.mirror(b), Error);             // a chain of mirrors would leave a's storage behind

  b.own_weights();
  EXPECT_FALSE(b.mirrors());
  EXPECT_TRUE(at::equal(b.params(), a.params()));  // the values it mirrored, in its own storage
  EXPECT_FALSE(at::equal(b.params(), b_before));
  const at::Tensor b_owned = b.params().clone(), b_momentum = b.momentum().clone();
  backward(a);
  sgd_step(a, sgd, 0.1);
  EXPECT_FALSE(at::equal(a.params(), b_owned));
  EXPECT_TRUE(at::equal(b.params(), b_owned));
  EXPECT_TRUE(at::equal(b.momentum(), b_momentum));
  // Its model's parameters are its own storage again, not a's.
  for (const auto& p : b.model().parameters()) {
    const auto* data = static_cast<const char*>(p.data_ptr());
    const auto* begin = static_cast<const char*>(b.params().data_ptr());
    EXPECT_TRUE(data >= begin && data < begin + b.params().nbytes());
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

TEST(Training, TestEveryEvaluatesTheTestSplitOnlyWhenDue) {
  RunConfig c = base_config();
  c.validation_fraction = 0.1;
  c.eval_every = 1;
  c.goal_error = 0.95;  // reached at the first evaluation, step 1, which is not a multiple of test_every
  InProcessCommunicator comm(1);
  const RunResult every = train_run(c, tiny(), data(), comm);
  c.test_every = 4;
  const RunResult sparse = train_run(c, tiny(), data(), comm);
  // 432 training samples, batch 16: 27 steps, all evaluated on the validation split.
  ASSERT_EQ(sparse.eval.step.size(), 27u);
  EXPECT_EQ(sparse.eval.val_accuracy, every.eval.val_accuracy);
  EXPECT_EQ(sparse.train.loss, every.train.loss);
  EXPECT_EQ(sparse.summary.steps_to_goal, 1);
  for (std::size_t i = 0; i < sparse.eval.step.size(); ++i) {
    const std::int64_t s = sparse.eval.step[i];
    const bool due = s % 4 == 0 || s == 27 || s == 1;  // every 4, the epoch end, the goal
    EXPECT_EQ(std::isfinite(sparse.eval.test_accuracy[i]), due) << "step " << s;
    if (due) {
      EXPECT_EQ(sparse.eval.test_loss[i], every.eval.test_loss[i]) << "step " << s;
    }
  }
  EXPECT_EQ(sparse.summary.final_test_accuracy, every.summary.final_test_accuracy);
  EXPECT_TRUE(std::isfinite(sparse.summary.best_test_accuracy));
}

// eval_growth's steps are fixed, log-spaced, and evaluating at them trains
// the same bits; a run resumed between them evaluates at the same steps.
TEST(Training, EvalGrowthEvaluatesAtLogSpacedStepsAndChangesNoTrainingBit) {
  std::vector<std::int64_t> grid;
  for (std::int64_t s = growth_evaluation_after(0, 0.25); s <= 60; s = growth_evaluation_after(s, 0.25)) {
    grid.push_back(s);
  }
  EXPECT_EQ(grid, (std::vector<std::int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 15, 18, 22, 27, 33, 41, 51}));
  EXPECT_EQ(growth_evaluation_after(9, 0.25), 10);  // between two of them: the next
  // 0.05 over Study B's longest run (20 epochs of 57,000 samples at batch 16):
  // each gap within 5 % of its step (or 1), in about 200 evaluations, not 1,425 of every 50.
  int points = 0;
  for (std::int64_t s = 1; s <= 71250; s = growth_evaluation_after(s, 0.05), ++points) {
    EXPECT_LE(growth_evaluation_after(s, 0.05) - s, std::max<std::int64_t>(1, s / 20)) << "after step " << s;
  }
  EXPECT_GT(points, 150);
  EXPECT_LT(points, 250);

  RunConfig c = base_config();
  c.epochs = 2;  // 30 steps an epoch
  InProcessCommunicator comm(1);
  const RunResult plain = train_run(c, tiny(), data(), comm);
  c.eval_growth = 0.25;
  const RunResult grown = train_run(c, tiny(), data(), comm);
  EXPECT_EQ(grown.eval.step,
            (std::vector<std::int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 15, 18, 22, 27, 30, 33, 41, 51, 60}));
  EXPECT_EQ(grown.train.loss, plain.train.loss);
  EXPECT_EQ(grown.summary.final_test_accuracy, plain.summary.final_test_accuracy);

  test::ScratchDir dir;
  const std::string path = dir.str() + "/run.ckpt.h5";
  {
    Trainer t(c, tiny(), data(), comm);
    t.run(nullptr, {path, 0, 20});  // checkpoints at 20 and 40
  }
  Trainer resumed(c, tiny(), data(), comm);
  resumed.restore_checkpoint(path);
  ASSERT_EQ(resumed.current_step(), 40);
  const RunResult r = resumed.run();
  EXPECT_EQ(r.eval.step, grown.eval.step);
  EXPECT_EQ(r.eval.test_accuracy, grown.eval.test_accuracy);
  EXPECT_EQ(r.train.loss, grown.train.loss);
}

TEST(Training, EvaluationSharedAmongWorkersEqualsOneForwardPassOverTheTestSet) {
  // 100 test images in batches of 7: 15 batches over 4 workers (3, 4, 4, 4), the
  // last batch short; with synchronous steps the evaluated model is replica 0.
  for (std::int64_t eval_batch : {7, 1000}) {
    RunConfig c = base_config();
    c.workers = 4;
    c.batch_size = 8;
    c.sync_period = 1;
    c.eval_batch = eval_batch;
    InProcessCommunicator comm(4);
    Trainer t(c, tiny(), data(), comm);
    const RunResult r = t.run();
    at::NoGradGuard no_grad;
    const at::Tensor logits = t.replica(0).model().forward(data().test_x);
    const double loss = at::cross_entropy_loss(logits, data().test_y).item<double>();
    const double accuracy = logits.argmax(1).eq(data().test_y).sum().item<double>() / 100.0;
    EXPECT_EQ(r.eval.test_accuracy.back(), accuracy) << "eval_batch " << eval_batch;
    EXPECT_NEAR(r.eval.test_loss.back(), loss, 1e-6 * loss) << "eval_batch " << eval_batch;
  }
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

namespace {
struct TinyBn : Model {
  TinyBn()
      : fc(register_module("fc", torch::nn::Linear(784, 16))),
        bn(register_module("bn", torch::nn::BatchNorm1d(16))),
        out(register_module("out", torch::nn::Linear(16, 10))) {}
  at::Tensor forward(const at::Tensor& x) override { return out(torch::relu(bn(fc(x.flatten(1))))); }
  torch::nn::Linear fc;
  torch::nn::BatchNorm1d bn;
  torch::nn::Linear out;
};
}  // namespace

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

namespace {
// Convolutions and batch norm: LibTorch runs them through oneDNN, which sizes
// its work by the thread count (the side-by-side workers must not hang in it).
struct TinyCnn : Model {
  TinyCnn()
      : conv(register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 8, 3).stride(2).padding(1)))),
        bn(register_module("bn", torch::nn::BatchNorm2d(8))),
        out(register_module("out", torch::nn::Linear(8 * 14 * 14, 10))) {}
  at::Tensor forward(const at::Tensor& x) override { return out(torch::relu(bn(conv(x))).flatten(1)); }
  torch::nn::Conv2d conv;
  torch::nn::BatchNorm2d bn;
  torch::nn::Linear out;
};

// A series as its bit patterns (NaN, where nothing was evaluated, equals itself).
std::vector<std::uint64_t> bits(const std::vector<double>& v) {
  std::vector<std::uint64_t> out(v.size());
  if (!v.empty()) std::memcpy(out.data(), v.data(), v.size() * sizeof(double));  // data() may be null
  return out;
}

// Every metric of a run that must not depend on how it was computed in parallel.
void expect_same_bits(const RunResult& a, const RunResult& b, const std::string& what) {
  EXPECT_EQ(bits(a.train.loss), bits(b.train.loss)) << what;
  EXPECT_EQ(bits(a.train.worker_loss), bits(b.train.worker_loss)) << what;
  EXPECT_EQ(bits(a.eval.test_loss), bits(b.eval.test_loss)) << what;
  EXPECT_EQ(bits(a.eval.test_accuracy), bits(b.eval.test_accuracy)) << what;
  EXPECT_EQ(bits(a.eval.val_loss), bits(b.eval.val_loss)) << what;
  EXPECT_EQ(bits(a.eval.worker_divergence), bits(b.eval.worker_divergence)) << what;
  EXPECT_EQ(bits(a.syncs.divergence), bits(b.syncs.divergence)) << what;
  EXPECT_EQ(a.sparsity.overall, b.sparsity.overall) << what;
}

// Restores LibTorch's thread count when a test ends.
struct ThreadsGuard {
  int saved = at::get_num_threads();
  ~ThreadsGuard() { at::set_num_threads(saved); }
};
}  // namespace

TEST(Training, EvalAtSyncEvaluatesAfterEveryWorldAveragingAndChangesNoTrainingBits) {
  // 480 samples, 4 workers x 16: 7 steps per epoch, 2 epochs; households of 2
  // average every 2 steps, all 4 workers every 4.
  RunConfig c = base_config();
  c.workers = 4;
  c.epochs = 2;
  c.sync_period = 4;
  c.group_size = 2;
  c.group_sync_period = 2;
  InProcessCommunicator comm(4);
  const RunResult plain = train_run(c, tiny(), data(), comm);
  c.eval_at_sync = true;
  const RunResult at_sync = train_run(c, tiny(), data(), comm);
  EXPECT_EQ(bits(at_sync.train.loss), bits(plain.train.loss));
  EXPECT_EQ(bits(at_sync.syncs.divergence), bits(plain.syncs.divergence));
  // Evaluated at every world averaging (4, 8, 12) and at the epoch ends (7, 14).
  EXPECT_EQ(plain.eval.step, (std::vector<std::int64_t>{7, 14}));
  EXPECT_EQ(at_sync.eval.step, (std::vector<std::int64_t>{4, 7, 8, 12, 14}));
  EXPECT_EQ(at_sync.eval.synced, (std::vector<std::int64_t>{1, 0, 1, 1, 0}));
  EXPECT_EQ(at_sync.eval.test_accuracy[1], plain.eval.test_accuracy[0]);  // step 7, between averagings
  EXPECT_EQ(at_sync.summary.final_test_accuracy, plain.summary.final_test_accuracy);
  // The last model all workers held: step 12. Without evaluations there, none.
  EXPECT_EQ(at_sync.summary.final_synced_test_accuracy, at_sync.eval.test_accuracy[3]);
  EXPECT_TRUE(std::isnan(plain.summary.final_synced_test_accuracy));
  // One household of all workers averages the world at its own period (level 1).
  c.group_size = 4;
  c.sync_period = kNever;
  const RunResult one_household = train_run(c, tiny(), data(), comm);
  EXPECT_EQ(one_household.eval.step, (std::vector<std::int64_t>{2, 4, 6, 7, 8, 10, 12, 14}));
  EXPECT_EQ(one_household.eval.synced, (std::vector<std::int64_t>{1, 1, 1, 0, 1, 1, 1, 1}));
  EXPECT_EQ(one_household.summary.final_synced_test_accuracy, one_household.summary.final_test_accuracy);
  // Synchronous training: every evaluation is of the model all workers hold.
  c.group_size = 1;
  c.sync_period = 1;
  const RunResult sync = train_run(c, tiny(), data(), comm);
  EXPECT_EQ(sync.eval.step, (std::vector<std::int64_t>{7, 14}));
  EXPECT_EQ(sync.eval.synced, (std::vector<std::int64_t>{1, 1}));
  EXPECT_EQ(sync.summary.final_synced_test_accuracy, sync.summary.final_test_accuracy);
}

TEST(Training, ParallelismResolvesAsDocumented) {
  EXPECT_EQ(parse_parallelism("auto"), Parallelism::automatic);
  EXPECT_EQ(parse_parallelism("workers"), Parallelism::workers);
  EXPECT_EQ(parse_parallelism("operations"), Parallelism::operations);
  EXPECT_THROW(parse_parallelism("threads"), ConfigError);
  const at::Device cpu(at::kCPU);
  EXPECT_EQ(resolve_parallelism(Parallelism::automatic, 4, 4, cpu), Parallelism::workers);
  EXPECT_EQ(resolve_parallelism(Parallelism::automatic, 8, 2, cpu), Parallelism::workers);
  EXPECT_EQ(resolve_parallelism(Parallelism::automatic, 2, 4, cpu), Parallelism::operations);
  EXPECT_EQ(resolve_parallelism(Parallelism::automatic, 1, 1, cpu), Parallelism::workers);  // one thread: the same
  EXPECT_EQ(resolve_parallelism(Parallelism::operations, 8, 2, cpu), Parallelism::operations);
  EXPECT_EQ(resolve_parallelism(Parallelism::workers, 1, 8, cpu), Parallelism::workers);
  // A GPU: workers on streams of their own wherever there are two, whatever the threads.
  const at::Device gpu(at::kCUDA, 0);
  EXPECT_EQ(resolve_parallelism(Parallelism::automatic, 8, 2, gpu), Parallelism::workers);
  EXPECT_EQ(resolve_parallelism(Parallelism::automatic, 2, 16, gpu), Parallelism::workers);
  EXPECT_EQ(resolve_parallelism(Parallelism::automatic, 1, 16, gpu), Parallelism::operations);
  EXPECT_EQ(resolve_parallelism(Parallelism::operations, 8, 2, gpu), Parallelism::operations);
  EXPECT_EQ(resolve_parallelism(Parallelism::workers, 8, 1, gpu), Parallelism::workers);
}

// Replica streams need a CUDA device: the error says which device and why. A
// run's own stream is nothing on the CPU, and in a build without CUDA says so.
TEST(Training, ReplicaStreamsNeedACudaDevice) {
  try {
    ReplicaStreams streams(at::Device(at::kCPU));
    FAIL() << "ReplicaStreams on the CPU";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cpu"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(OwnStreamGuard(at::Device(at::kCPU)));
#if !DPSTUDY_CUDA
  try {
    OwnStreamGuard own(at::Device(at::kCUDA, 0));
    FAIL() << "OwnStreamGuard on cuda:0 in a build without CUDA";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("DPSTUDY_WITH_CUDA=OFF"), std::string::npos) << e.what();
  }
#endif
}

// The promise of --parallel workers: the workers side by side on 2 threads give
// the bits of the same run on one thread (synchronous, local SGD with groups,
// validation and divergence, SNIP pruning, convolutions with batch norm,
// fewer workers than threads, more workers than threads).
TEST(Training, WorkersSideBySideGiveTheBitsOfOneThread) {
  const ThreadsGuard restore;
  struct Case {
    std::string name;
    std::function<void(RunConfig&)> set;
    ModelFactory model;
  };
  const std::vector<Case> cases = {
      {"synchronous, 4 workers", [](RunConfig&) {}, tiny()},
      {"local SGD, groups, validation, 4 workers",
       [](RunConfig& c) {
         c.sync_period = 4;
         c.group_size = 2;
         c.group_sync_period = 2;
         c.overlap = 0.25;
         c.validation_fraction = 0.1;
         c.eval_every = 3;
       },
       tiny()},
      {"SNIP, 3 workers",
       [](RunConfig& c) {
         c.workers = 3;
         c.sparsity = 0.8;
         c.pruning = Pruning::snip;
         c.snip_batches = 2;
       },
       tiny()},
      {"convolution and batch norm, local SGD",
       [](RunConfig& c) {
         c.sync_period = 2;
         c.average_buffers = true;
       },
       [] { return std::make_shared<TinyCnn>(); }},
      {"one worker", [](RunConfig& c) { c.workers = 1; }, tiny()},
  };
  for (const Case& k : cases) {
    RunConfig c = base_config();
    c.workers = 4;
    c.batch_size = 8;
    k.set(c);
    auto run = [&](int threads, Parallelism parallel) {
      at::set_num_threads(threads);
      InProcessCommunicator comm(c.workers);
      Trainer t(c, k.model, data(), comm, Execution{parallel, threads});
      EXPECT_EQ(t.parallelism(), Parallelism::workers) << k.name;
      EXPECT_EQ(t.threads(), threads) << k.name;
      return t.run();
    };
    const RunResult one = run(1, Parallelism::automatic);
    const RunResult side_by_side = run(2, Parallelism::workers);
    ASSERT_FALSE(one.train.loss.empty()) << k.name;
    expect_same_bits(one, side_by_side, k.name);
  }
}

TEST(Training, ATrainerToldNoThreadCountFindsTheProcesssAfterASideBySideOne) {
  const ThreadsGuard restore;
  at::set_num_threads(2);
  RunConfig c = base_config();
  c.workers = 2;
  InProcessCommunicator comm(2);
  {
    Trainer side(c, tiny(), data(), comm, Execution{Parallelism::workers, 0});
    EXPECT_EQ(side.threads(), 2);
    side.step();
    EXPECT_EQ(at::get_num_threads(), 1);  // LibTorch's own count, while its workers step side by side
  }
  Trainer next(c, tiny(), data(), comm, Execution{Parallelism::operations, 0});
  EXPECT_EQ(next.threads(), 2);
  EXPECT_EQ(next.parallelism(), Parallelism::operations);
  EXPECT_EQ(at::get_num_threads(), 2);
}

// What RunConfig::inert_keys names (studies warn of it: docs/studies.md) must
// change no bit of the run: each key trained at two values where its
// condition holds. And the comparison can tell: an active key changes bits.
TEST(Training, KeysNamedInertChangeNoBit) {
  struct Case {
    std::string key, because;
    std::function<void(RunConfig&)> setting, one, other;
  };
  const auto none = [](RunConfig&) {};
  const std::vector<Case> cases = {
      {"momentum", "optimizer = sgd", [](RunConfig& c) { c.optimizer = OptimizerKind::sgd; },
       [](RunConfig& c) { c.momentum = 0.9; }, [](RunConfig& c) { c.momentum = 0.5; }},
      {"lr_milestones", "schedule = cosine", [](RunConfig& c) { c.schedule = LrSchedule::cosine; }, none,
       [](RunConfig& c) { c.lr_milestones = {0.5, 1.5}; }},
      {"lr_decay", "schedule = linear", [](RunConfig& c) { c.schedule = LrSchedule::linear; }, none,
       [](RunConfig& c) { c.lr_decay = 0.5; }},
      {"lr_end_factor", "schedule = step",
       [](RunConfig& c) {
         c.schedule = LrSchedule::step;
         c.lr_milestones = {0.5};
       },
       none, [](RunConfig& c) { c.lr_end_factor = 0.5; }},
      {"lr_decay_steps", "schedule = cosine", [](RunConfig& c) { c.schedule = LrSchedule::cosine; }, none,
       [](RunConfig& c) { c.lr_decay_steps = 5; }},
      {"lr_base_batch", "lr_scaling = none", [](RunConfig& c) { c.workers = 2; }, none,
       [](RunConfig& c) { c.lr_base_batch = 256; }},
      {"warmup_start", "warmup_epochs = 0", none, none, [](RunConfig& c) { c.warmup_start = WarmupStart::base; }},
      {"local_sgd_from_epoch", "sync_period = 1", [](RunConfig& c) { c.workers = 4; }, none,
       [](RunConfig& c) { c.local_sgd_from_epoch = 1; }},
      {"group_sync_period", "sync_period = 1",
       [](RunConfig& c) {
         c.workers = 4;
         c.group_size = 2;
       },
       none, [](RunConfig& c) { c.group_sync_period = 2; }},
      {"group_sync_period", "group_size = 1",
       [](RunConfig& c) {
         c.workers = 4;
         c.sync_period = 4;
       },
       none, [](RunConfig& c) { c.group_sync_period = 2; }},
      {"pruning", "sparsity = 0", none, none, [](RunConfig& c) { c.pruning = Pruning::random; }},
      {"snip_batches", "sparsity = 0", none, none, [](RunConfig& c) { c.snip_batches = 2; }},
      {"snip_batches", "pruning = random",
       [](RunConfig& c) {
         c.sparsity = 0.5;
         c.pruning = Pruning::random;
       },
       none, [](RunConfig& c) { c.snip_batches = 2; }},
      {"block_size", "granularity = fine", [](RunConfig& c) { c.workers = 2; }, none,
       [](RunConfig& c) { c.block_size = 7; }},
      {"block_size", "granularity = coarse",
       [](RunConfig& c) {
         c.workers = 2;
         c.overlap = 0.5;
         c.granularity = Granularity::coarse;
       },
       none, [](RunConfig& c) { c.block_size = 7; }},
  };
  // One worker: nothing to average with, one shard in one order at any overlap.
  const auto local_sgd = [](RunConfig& c) { c.sync_period = 3; };
  const std::vector<Case> one_worker = {
      {"sync_period", "workers = 1", none, none, local_sgd},
      {"sync_period", "workers = 1", none, none, [](RunConfig& c) { c.sync_period = kNever; }},
      {"local_sgd_from_epoch", "workers = 1", local_sgd, none, [](RunConfig& c) { c.local_sgd_from_epoch = 1; }},
      {"average_momentum", "workers = 1", local_sgd, none, [](RunConfig& c) { c.average_momentum = true; }},
      {"overlap", "workers = 1", none, none, [](RunConfig& c) { c.overlap = 0.5; }},
      {"overlap", "workers = 1", [](RunConfig& c) { c.granularity = Granularity::coarse; }, none,
       [](RunConfig& c) { c.overlap = 0.5; }},
      {"overlap_mode", "workers = 1", [](RunConfig& c) { c.overlap = 0.5; }, none,
       [](RunConfig& c) { c.overlap_mode = OverlapMode::spread; }},
      {"dirichlet_alpha", "workers = 1", none, none, [](RunConfig& c) { c.dirichlet_alpha = 0.5; }},
      {"shard_owner", "workers = 1", none, none, [](RunConfig& c) { c.shard_owner = ShardOwner::group; }},
  };
  std::vector<Case> all = cases;
  all.insert(all.end(), one_worker.begin(), one_worker.end());
  all.push_back({"overlap_mode", "overlap = 0", [](RunConfig& c) { c.workers = 2; }, none,
                 [](RunConfig& c) { c.overlap_mode = OverlapMode::spread; }});
  all.push_back({"average_momentum", "optimizer = sgd",
                 [](RunConfig& c) {
                   c.workers = 2;
                   c.optimizer = OptimizerKind::sgd;
                   c.sync_period = 2;
                 },
                 none, [](RunConfig& c) { c.average_momentum = true; }});
  const std::string one_shard = "shard_owner = group with group_size = workers";
  const auto households = [](RunConfig& c) {
    c.workers = 2;
    c.group_size = 2;
    c.shard_owner = ShardOwner::group;
    c.sync_period = 2;
  };
  all.push_back({"overlap", one_shard, households, none, [](RunConfig& c) { c.overlap = 0.5; }});
  all.push_back({"dirichlet_alpha", one_shard, households, none, [](RunConfig& c) { c.dirichlet_alpha = 0.5; }});
  for (const Case& k : all) {
    RunConfig a = base_config();
    a.epochs = 2;
    k.setting(a);
    RunConfig b = a;
    k.one(a);
    k.other(b);
    const auto named = b.inert_keys();
    EXPECT_NE(std::find(named.begin(), named.end(), std::make_pair(k.key, k.because)), named.end())
        << k.key << " where " << k.because;
    // One run id for both: the study trains them once.
    EXPECT_EQ(canonical(a).key_values(), canonical(b).key_values()) << k.key << " where " << k.because;
    InProcessCommunicator comm(a.workers);
    RunResult ra = train_run(a, tiny(), data(), comm), rb = train_run(b, tiny(), data(), comm);
    if (a.workers == 1) {
      // One worker's "averaging" is with itself: its log of sync events (each at
      // divergence 0) differs with the period, while no trained bit does.
      for (double d : ra.syncs.divergence) EXPECT_EQ(d, 0.0);
      for (double d : rb.syncs.divergence) EXPECT_EQ(d, 0.0);
      ra.syncs = {};
      rb.syncs = {};
    }
    expect_same_bits(ra, rb, k.key + " where " + k.because);
  }
  // Every key canonical() may set is one proved above: configs across the rules
  // name no other inert key.
  std::set<std::string> proved_keys;
  for (const Case& k : all) proved_keys.insert(k.key);
  for (int variant = 0; variant < 8; ++variant) {
    RunConfig c = base_config();
    c.workers = variant % 2 == 0 ? 1 : 2;
    c.optimizer = variant & 2 ? OptimizerKind::sgd : OptimizerKind::momentum;
    c.schedule = variant & 4 ? LrSchedule::cosine : LrSchedule::step;
    c.sparsity = variant & 4 ? 0.5 : 0.0;
    c.pruning = Pruning::random;
    c.sync_period = variant >= 4 ? 2 : 1;
    if (variant == 5) {
      c.group_size = 2;
      c.shard_owner = ShardOwner::group;
    }
    for (const auto& [key, because] : c.inert_keys()) {
      EXPECT_TRUE(proved_keys.count(key))
          << key << " where " << because << ": canonicalised without a test of its bits";
    }
  }
  // The same comparison sees a key that is not inert: momentum under momentum SGD.
  RunConfig a = base_config(), b = base_config();
  b.momentum = 0.5;
  const auto named = a.inert_keys();
  EXPECT_TRUE(std::none_of(named.begin(), named.end(), [](const auto& kv) { return kv.first == "momentum"; }));
  InProcessCommunicator comm(1);
  EXPECT_NE(bits(train_run(a, tiny(), data(), comm).train.loss), bits(train_run(b, tiny(), data(), comm).train.loss));
}

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

// --runs_at_once auto on a GPU: runs of a measured peak fit in 80 % of the
// GPU's memory shared by its processes, less each process's CUDA context.
TEST(RunsAtOnce, AsManyAsFitInTheGpusMemory) {
  const double h200 = 143771;  // MiB
  // 0.8 * 143771 - 512 = 114504.8 MiB: 57 runs of 2000 MiB.
  EXPECT_EQ(runs_that_fit(h200, 1, 2000), 57);
  // Four processes on the GPU: 0.8 * 143771 / 4 - 512 = 28242.2 MiB each: 14 runs.
  EXPECT_EQ(runs_that_fit(h200, 4, 2000), 14);
  EXPECT_EQ(runs_that_fit(h200, 1, 10), kMostRunsAtOnce);  // a small run: capped
  EXPECT_EQ(runs_that_fit(h200, 1, 200000), 1);            // larger than the GPU: one, alone
  EXPECT_EQ(runs_that_fit(16384, 64, 100), 1);             // no room beside the contexts
  // Unknown (the CPU, a first run that did not train): one.
  EXPECT_EQ(runs_that_fit(std::nan(""), 1, 2000), 1);
  EXPECT_EQ(runs_that_fit(h200, 1, std::nan("")), 1);
  EXPECT_EQ(runs_that_fit(h200, 0, 2000), 1);
}

// Which runs qualify for whole-step CUDA graphs, and why the others do not.
// A CUDA device here is only a name: nothing runs on it.
TEST(CudaGraphs, WhichRunsQualifyAndWhyTheOthersDoNot) {
  EXPECT_EQ(parse_cuda_graphs("auto"), CudaGraphs::automatic);
  EXPECT_EQ(to_string(parse_cuda_graphs("on")), "on");
  EXPECT_EQ(to_string(parse_cuda_graphs("off")), "off");
  EXPECT_THROW(parse_cuda_graphs("maybe"), ConfigError);
  const RunConfig c = base_config();
  const c10::Device cpu(c10::kCPU), gpu(c10::kCUDA, 0);
  EXPECT_EQ(why_not_graphed(c, gpu, 1), "");
  EXPECT_TRUE(resolve_cuda_graphs(CudaGraphs::automatic, c, gpu, 1));
  EXPECT_FALSE(resolve_cuda_graphs(CudaGraphs::off, c, gpu, 1));
  EXPECT_NE(why_not_graphed(c, cpu, 1).find("needs a CUDA device, and this run trains on the cpu"), std::string::npos);
  EXPECT_FALSE(resolve_cuda_graphs(CudaGraphs::automatic, c, cpu, 1));
  try {
    resolve_cuda_graphs(CudaGraphs::on, c, cpu, 1);
    ADD_FAILURE() << "on, on the CPU, was not refused";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--cuda_graphs: 'on' cannot apply: needs a CUDA device"), std::string::npos)
        << e.what();
  }
  EXPECT_NE(why_not_graphed(c, gpu, 2).find("2 processes average through MPI on the host"), std::string::npos);
  RunConfig cosine = c;
  cosine.schedule = LrSchedule::cosine;
  EXPECT_NE(why_not_graphed(cosine, gpu, 1).find("changes at every step (schedule cosine)"), std::string::npos);
  RunConfig step = c;  // a rate that changes at milestones only: captured again at each
  step.schedule = LrSchedule::step;
  step.lr_milestones = {1};
  step.warmup_epochs = 0.5;  // and stepped eagerly while it warms up
  EXPECT_EQ(why_not_graphed(step, gpu, 1), "");
  RunConfig bf16 = c;
  bf16.precision = Precision::bf16;
  EXPECT_EQ(why_not_graphed(bf16, gpu, 1).empty(), TORCH_VERSION_MAJOR >= 2) << why_not_graphed(bf16, gpu, 1);

  // A Trainer asked for graphs on the CPU refuses; auto there steps eagerly.
  InProcessCommunicator comm(1);
  EXPECT_THROW(Trainer(c, tiny(), data(), comm, Execution{Parallelism::automatic, 0, 0, CudaGraphs::on}), ConfigError);
  const Trainer automatic(c, tiny(), data(), comm, Execution{Parallelism::automatic, 0, 0, CudaGraphs::automatic});
  EXPECT_FALSE(automatic.cuda_graphs());
  EXPECT_EQ(automatic.graph_captures(), 0);
}

// --memory_format channels_last: each convolution's weight lies in the flat
// buffers as [O, kH, kW, I], also while a replica mirrors another, and the
// inputs go in as channels_last. The weights start as the contiguous run's;
// the run gives its own bits the same each time, resumes to them from a
// checkpoint, and is close to the contiguous run. A model without
// convolutions refuses it.
namespace {
// A second convolution with 4 input channels: with 1, channels_last lies as contiguous does.
struct TwoConvs : Model {
  TwoConvs()
      : first(register_module("first", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 4, 3).stride(2)))),
        second(register_module("second", torch::nn::Conv2d(torch::nn::Conv2dOptions(4, 4, 3).stride(2)))),
        out(register_module("out", torch::nn::Linear(4 * 6 * 6, 10))) {}
  at::Tensor forward(const at::Tensor& x) override {
    return out(torch::relu(second(torch::relu(first(x)))).flatten(1));
  }
  torch::nn::Conv2d first, second;
  torch::nn::Linear out;
};
}  // namespace

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
