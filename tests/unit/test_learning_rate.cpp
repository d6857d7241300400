#include <gtest/gtest.h>

#include <cmath>

#include "dpstudy/learning_rate.hpp"

using namespace dpstudy;

namespace {
RunConfig config() {
  RunConfig c;
  c.lr = 0.1;
  c.batch_size = 32;
  c.workers = 4;
  c.epochs = 10;
  return c;
}
}  // namespace

TEST(LearningRate, ScalingRulesUseTheGlobalBatch) {
  RunConfig c = config();
  EXPECT_DOUBLE_EQ(c.peak_lr(), 0.1);
  c.lr_scaling = LrScaling::linear;
  EXPECT_DOUBLE_EQ(c.peak_lr(), 0.4);  // W b / b = 4
  c.lr_scaling = LrScaling::sqrt;
  EXPECT_DOUBLE_EQ(c.peak_lr(), 0.2);
  c.lr_base_batch = 256;
  c.lr_scaling = LrScaling::linear;
  EXPECT_DOUBLE_EQ(c.peak_lr(), 0.05);  // 128 / 256
  c.lr = 0;
  c.batch_lr_ratio = 640;  // eta = b / r = 0.05, then x 0.5
  EXPECT_DOUBLE_EQ(c.peak_lr(), 0.025);
}

TEST(LearningRate, WarmupThenSchedules) {
  RunConfig c = config();
  c.warmup_epochs = 1;
  LearningRate constant(c, 100);
  EXPECT_DOUBLE_EQ(constant.at(0), 0.1 / 100);
  EXPECT_DOUBLE_EQ(constant.at(99), 0.1);
  EXPECT_DOUBLE_EQ(constant.at(500), 0.1);
  c.lr_scaling = LrScaling::linear;
  c.warmup_start = WarmupStart::base;
  LearningRate goyal(c, 100);
  EXPECT_DOUBLE_EQ(goyal.at(0), 0.1 + 0.3 / 100);  // from the base rate to W x it
  EXPECT_DOUBLE_EQ(goyal.at(99), 0.4);

  c = config();
  c.schedule = LrSchedule::step;
  c.lr_milestones = {5, 8};
  LearningRate step(c, 100);
  EXPECT_DOUBLE_EQ(step.at(499), 0.1);
  EXPECT_NEAR(step.at(500), 0.01, 1e-15);
  EXPECT_NEAR(step.at(999), 0.001, 1e-15);

  c.schedule = LrSchedule::cosine;
  c.lr_end_factor = 0.1;
  LearningRate cosine(c, 100);
  EXPECT_DOUBLE_EQ(cosine.at(0), 0.1);
  EXPECT_NEAR(cosine.at(500), 0.055, 1e-12);
  EXPECT_NEAR(cosine.at(1000), 0.01, 1e-12);

  c.schedule = LrSchedule::linear;
  c.lr_decay_steps = 200;
  LearningRate linear(c, 100);
  EXPECT_NEAR(linear.at(100), 0.055, 1e-12);
  EXPECT_NEAR(linear.at(200), 0.01, 1e-12);
  EXPECT_NEAR(linear.at(900), 0.01, 1e-12);
}

#include "dpstudy/metrics.hpp"

TEST(StepsToResult, FirstReachingOnAKnownSeries) {
  const std::vector<std::int64_t> steps = {100, 200, 300, 400, 500};
  const std::vector<double> accuracy = {0.5, 0.8, std::nan(""), 0.97, 0.99};
  EXPECT_EQ(dpstudy::first_reaching(steps, accuracy, 0.8, false), 200);
  EXPECT_EQ(dpstudy::first_reaching(steps, accuracy, 0.9, false), 400);  // NaN never reaches
  EXPECT_EQ(dpstudy::first_reaching(steps, accuracy, 0.995, false), -1);
  const std::vector<double> loss = {2.0, 1.0, 0.5, 0.4, 0.3};
  EXPECT_EQ(dpstudy::first_reaching(steps, loss, 0.5, true), 300);
}
