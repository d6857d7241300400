// When a run evaluates (test_every, eval_growth, eval_at_sync) and ends
// (max_steps), and that an evaluation shared among the workers is one pass
// over the test set.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "training_support.hpp"

using namespace dpstudy;
using namespace dpstudy::test;

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
  // 0.05 over 20 epochs of 57,000 samples at batch 16 (Study B's longest run without its step budget):
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

  const RunResult r = resumed_run(c, comm, 20, 40);  // checkpoints at 20 and 40
  EXPECT_EQ(r.eval.step, grown.eval.step);
  EXPECT_EQ(r.eval.test_accuracy, grown.eval.test_accuracy);
  EXPECT_EQ(r.train.loss, grown.train.loss);
}

// A step budget ends the run mid-epoch, evaluated at its last step. Its steps,
// learning rates included, are the first steps of the run without the budget:
// a budget only decides which runs end before a goal.
TEST(Training, MaxStepsEndsTheRunWithTheStepsOfTheLongerRun) {
  RunConfig c = base_config();
  c.epochs = 2;
  c.validation_fraction = 0.1;      // 27 steps an epoch
  c.schedule = LrSchedule::cosine;  // laid out over the 54 steps of 2 epochs, budget or not
  c.test_every = 1000;
  InProcessCommunicator comm(1);
  const RunResult whole = train_run(c, tiny(), data(), comm);
  c.max_steps = 40;
  const RunResult cut = train_run(c, tiny(), data(), comm);
  const auto first = [](const std::vector<double>& v) { return std::vector<double>(v.begin(), v.begin() + 40); };
  EXPECT_EQ(cut.summary.status, RunStatus::completed);
  EXPECT_EQ(cut.summary.steps, 40);
  EXPECT_EQ(cut.eval.step, (std::vector<std::int64_t>{27, 40}));
  EXPECT_TRUE(std::isfinite(cut.eval.test_accuracy.back()));  // the test split at the last step
  EXPECT_EQ(cut.train.loss, first(whole.train.loss));
  EXPECT_EQ(cut.train.lr, first(whole.train.lr));
  EXPECT_GT(cut.train.lr.back(), 0.05 * 0.1);  // a cosine laid out over 40 steps would end near 0

  const RunResult r = resumed_run(c, comm, 30, 30);  // a checkpoint at 30
  EXPECT_EQ(r.eval.step, cut.eval.step);
  EXPECT_EQ(r.train.loss, cut.train.loss);
  EXPECT_EQ(r.summary.final_test_accuracy, cut.summary.final_test_accuracy);

  for (const std::int64_t budget : {54, 1000}) {  // at or beyond the end: the whole run
    c.max_steps = budget;
    const RunResult all = train_run(c, tiny(), data(), comm);
    EXPECT_EQ(all.eval.step, whole.eval.step) << "max_steps " << budget;
    EXPECT_EQ(all.train.loss, whole.train.loss) << "max_steps " << budget;
  }
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
