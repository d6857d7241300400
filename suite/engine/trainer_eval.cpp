// A Trainer's evaluations: the averaged model on the validation split and the
// test set, shared among the run's processes, recorded as the eval series.
#include <ATen/ATen.h>

#include <limits>

#include "dpstudy/precision.hpp"
#include "dpstudy/trainer.hpp"
#include "stopwatch.hpp"

namespace dpstudy {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace

Trainer::Evaluation Trainer::evaluate(const at::Tensor& x, const at::Tensor& y, const at::Tensor* index) {
  at::NoGradGuard no_grad;
  const std::int64_t n = index ? index->size(0) : y.size(0);
  if (n == 0) return {kNaN, kNaN};
  // Worker w evaluates batches [nb w / W, nb (w + 1) / W); a process evaluates
  // its workers' shares, and the partial sums are added in worker order. The
  // order of additions depends on W only, so every layout gets the same bits,
  // and the P processes of a run share the evaluation instead of each doing all of it.
  const std::int64_t eb = config_.eval_batch, nb = (n + eb - 1) / eb;
  const int workers = comm_.world_workers(), first = comm_.first_local_worker();
  std::vector<double> loss_of(std::size_t(comm_.local_workers()), 0.0), correct_of(loss_of.size(), 0.0);
  auto evaluate_share = [&](int i) {
    const auto lw = std::size_t(i);
    const std::int64_t w = first + i;
    for (std::int64_t batch = nb * w / workers; batch < nb * (w + 1) / workers; ++batch) {
      const std::int64_t b = batch * eb, m = std::min(eb, n - b);
      at::Tensor xb, yb;
      if (index) {
        const at::Tensor idx = index->narrow(0, b, m);
        xb = x.index_select(0, idx);
        yb = y.index_select(0, idx);
      } else {
        xb = x.narrow(0, b, m);
        yb = y.narrow(0, b, m);
      }
      at::Tensor logits;
      {
        const PrecisionScope precision(config_.precision, x.device());
        logits = eval_->model().forward(in_format(xb)).to(at::kFloat);
      }
      loss_of[lw] += at::cross_entropy_loss(logits, yb, {}, at::Reduction::Sum).item<double>();
      correct_of[lw] += double(logits.argmax(1).eq(yb).sum().item<std::int64_t>());  // exact below 2^53
    }
  };
  claim_threads();
  for_each_local(comm_.local_workers(), [&](int lw) {
    const at::NoGradGuard no_grad_here;  // thread-local
    evaluate_share(lw);
  });
  double loss = 0, correct = 0;
  for (double v : comm_.all_workers(loss_of)) loss += v;
  for (double v : comm_.all_workers(correct_of)) correct += v;
  return {loss / double(n), correct / double(n)};
}

bool Trainer::evaluate_into(RunResult& r, double train_loss, bool test_due, double elapsed_s) {
  const auto t0 = Clock::now();
  const RunConfig& c = config_;
  // The averaged model: with identical replicas that is any replica.
  if (identical_) {
    eval_->params().copy_(params_[0]);
  } else {
    comm_.mean(params_, 0, c.workers, eval_->params());
  }
  if (eval_->buffers().numel() > 0) comm_.mean(buffers_, 0, c.workers, eval_->buffers());
  const bool have_val = !val_idx_.empty();
  const Evaluation val = have_val ? evaluate(data_.train_x, data_.train_y, &val_index_) : Evaluation{kNaN, kNaN};
  const bool goal_open = c.goal_error > 0 && r.summary.steps_to_goal < 0;
  const bool val_at_goal = goal_open && have_val && 1.0 - val.accuracy <= c.goal_error;
  const Evaluation test = test_due || !have_val || val_at_goal ? evaluate(data_.test_x, data_.test_y, nullptr)
                                                               : Evaluation{kNaN, kNaN};
  EvalSeries& e = r.eval;
  e.step.push_back(step_);
  e.epoch.push_back(double(step_) / double(steps_per_epoch_));
  e.test_loss.push_back(test.loss);
  e.test_accuracy.push_back(test.accuracy);
  e.val_loss.push_back(val.loss);
  e.val_accuracy.push_back(val.accuracy);
  e.train_loss.push_back(train_loss);
  e.worker_divergence.push_back(last_divergence_);
  e.synced.push_back(identical_ || averaged_world_);
  eval_s_ += seconds_since(t0);
  const bool at_goal = have_val ? val_at_goal : goal_open && 1.0 - test.accuracy <= c.goal_error;
  if (at_goal) {
    r.summary.steps_to_goal = step_;
    r.summary.time_to_goal_s = elapsed_s + seconds_since(t0);
  }
  return at_goal;
}

}  // namespace dpstudy
