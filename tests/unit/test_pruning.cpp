// Sparsity at initialisation: SNIP against a brute-force derivative, the top-k
// mask, and the mask's invariants in training.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "dpstudy/dataset.hpp"
#include "dpstudy/error.hpp"
#include "dpstudy/fixtures.hpp"
#include "dpstudy/pruning.hpp"
#include "dpstudy/trainer.hpp"
#include "test_support.hpp"

using namespace dpstudy;

namespace {

struct Tiny : Model {
  Tiny() : fc(register_module("fc", torch::nn::Linear(4, 3))) {}
  at::Tensor forward(const at::Tensor& x) override { return fc(x.flatten(1)); }
  torch::nn::Linear fc;
};

struct Small : Model {
  Small() : fc1(register_module("fc1", torch::nn::Linear(784, 16))), fc2(register_module("fc2", torch::nn::Linear(16, 10))) {}
  at::Tensor forward(const at::Tensor& x) override { return fc2(torch::relu(fc1(x.flatten(1)))); }
  torch::nn::Linear fc1, fc2;
};

const TrainingData& data() {
  static test::ScratchDir dir;
  static const TrainingData d = [] {
    write_fixtures(dir.str(), {320, 50, 3, false});
    return prepare_data(load_dataset("mnist", Split::train, {dir.str()}), load_dataset("mnist", Split::test, {dir.str()}));
  }();
  return d;
}

}  // namespace

TEST(Snip, ScoresAreTheBruteForceConnectionSensitivity) {
  torch::manual_seed(3);
  auto model = std::make_shared<Tiny>();
  Replica r(model);
  const at::Tensor x = torch::randn({5, 4}), y = torch::tensor({0, 2, 1, 1, 0}, torch::kLong);
  const at::Tensor scores = snip_scores(r, {x}, {y});
  EXPECT_EQ(r.grads().abs().sum().item<double>(), 0.0);  // gradients left clean
  // dL/dc_j for the mask c on weight j, by central differences in double precision.
  const at::Tensor w = model->fc->weight.detach().to(torch::kDouble), b = model->fc->bias.detach().to(torch::kDouble);
  const at::Tensor xd = x.to(torch::kDouble);
  auto loss = [&](const at::Tensor& c) {
    return at::cross_entropy_loss(at::linear(xd, w * c.view({3, 4}), b), y).item<double>();
  };
  const double eps = 1e-6;
  for (int j = 0; j < 12; ++j) {
    at::Tensor up = torch::ones({12}, torch::kDouble), down = torch::ones({12}, torch::kDouble);
    up[j] = 1 + eps;
    down[j] = 1 - eps;
    const double sensitivity = std::fabs((loss(up) - loss(down)) / (2 * eps));
    EXPECT_NEAR(scores[j].item<double>(), sensitivity, 1e-4 * std::max(1.0, sensitivity)) << "weight " << j;
  }
  // Only the weight matrix is prunable, not the bias.
  const at::Tensor prunable = prunable_positions(r);
  EXPECT_EQ(prunable.sum().item<double>(), 12);
  EXPECT_EQ(prunable.narrow(0, 12, 3).sum().item<double>(), 0);
}

TEST(Snip, GlobalTopKKeepsTheHighestScoresAndBreaksTiesByIndex) {
  const at::Tensor scores = torch::tensor({0.5, 0.9, 0.1, 0.5, 0.5, 7.0, 0.0});
  const at::Tensor prunable = torch::tensor({1, 1, 1, 1, 1, 0, 1}, torch::kFloat);
  // 6 prunable, sparsity 0.5: keep 3 (0.9, then the first two 0.5s); the unprunable one stays.
  EXPECT_TRUE(at::equal(top_k_mask(scores, prunable, 0.5), torch::tensor({1, 1, 0, 1, 0, 1, 0}, torch::kFloat)));
  EXPECT_TRUE(at::equal(top_k_mask(scores, prunable, 0.0), torch::ones({7})));
}

TEST(Snip, PrunedWeightsStayZeroInEveryModeAndWorker) {
  for (Pruning pruning : {Pruning::snip, Pruning::random}) {
    for (OptimizerKind opt : {OptimizerKind::sgd, OptimizerKind::momentum, OptimizerKind::nesterov}) {
      for (int sync : {1, 3}) {
        RunConfig c;
        c.dataset = "mnist";
        c.workers = 2;
        c.batch_size = 16;
        c.lr = 0.05;
        c.weight_decay = 1e-3;
        c.optimizer = opt;
        c.sync_period = sync;
        c.average_momentum = true;
        c.sparsity = 0.9;
        c.pruning = pruning;
        c.snip_batches = 2;
        c.epochs = 1;
        InProcessCommunicator comm(2);
        Trainer t(c, [] { return std::make_shared<Small>(); }, data(), comm);
        const at::Tensor pruned = t.mask().eq(0);
        // 784*16 + 16*10 = 12704 prunable weights; 90 % of them, rounded.
        EXPECT_EQ(pruned.sum().item<std::int64_t>(), 12704 - std::llround(0.1 * 12704));
        const RunResult r = t.run();
        for (int w = 0; w < 2; ++w) {
          EXPECT_EQ(t.replica(w).params().masked_select(pruned).abs().max().item<float>(), 0.0f);
          EXPECT_EQ(t.replica(w).momentum().masked_select(pruned).abs().max().item<float>(), 0.0f);
        }
        EXPECT_NEAR(r.sparsity.overall, 0.9, 1e-4);
        ASSERT_EQ(r.sparsity.per_parameter.size(), 2u);
        EXPECT_EQ(r.sparsity.per_parameter[0].first, "fc1.weight");
      }
    }
  }
}

TEST(Snip, TheMaskDependsOnTheRunSeedOnly) {
  RunConfig c;
  c.dataset = "mnist";
  c.workers = 2;
  c.batch_size = 16;
  c.lr = 0.05;
  c.sparsity = 0.5;
  InProcessCommunicator comm(2);
  Trainer a(c, [] { return std::make_shared<Small>(); }, data(), comm);
  Trainer b(c, [] { return std::make_shared<Small>(); }, data(), comm);
  EXPECT_TRUE(at::equal(a.mask(), b.mask()));
  c.seed = 2;
  Trainer other(c, [] { return std::make_shared<Small>(); }, data(), comm);
  EXPECT_FALSE(at::equal(a.mask(), other.mask()));
  c.sparsity = 1.0;
  EXPECT_THROW(validate(c), ConfigError);
}
