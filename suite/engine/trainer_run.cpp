// A Trainer's run: its loop of steps, read points, evaluations, checkpoints
// and stops, and the summary it ends with.
#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "dpstudy/device_memory.hpp"
#include "dpstudy/error.hpp"
#include "dpstudy/fault.hpp"
#include "dpstudy/runtime_info.hpp"
#include "dpstudy/stop.hpp"
#include "dpstudy/trainer.hpp"
#include "stopwatch.hpp"

namespace dpstudy {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace

// The run's shape and its shards, on the progress sink, and a resumption.
void Trainer::announce(ProgressSink* progress) const {
  const RunConfig& c = config_;
  if (progress) {
    char line[400];
    std::snprintf(line, sizeof line,
                  "# %d workers, %d shard owners, %lld training samples (%lld held out), %lld steps/epoch, "
                  "%lld parameters; shard size min %lld mean %.1f max %lld; covered %lld; mean pairwise "
                  "overlap %.1f samples (%.4f of the training set)",
                  c.workers, c.shard_owners(), (long long)train_idx_.size(), (long long)val_idx_.size(),
                  (long long)steps_per_epoch_, (long long)eval_->parameter_count(), (long long)assignment_.min_size,
                  assignment_.mean_size, (long long)assignment_.max_size, (long long)assignment_.covered,
                  assignment_.mean_intersection, assignment_.mean_overlap_fraction);
    progress->message(line);
    if (step_ > 0) progress->message("# resumed from a checkpoint at step " + std::to_string(step_));
  }
}

// The summary of a run ended at step_ (finished, diverged or stopped) after wall_time_s.
void Trainer::summarize(RunResult& r, double wall_time_s) {
  const RunConfig& c = config_;
  RunSummary& s = r.summary;
  s.steps = step_;
  s.steps_per_epoch = steps_per_epoch_;
  s.parameters = eval_->parameter_count();
  s.wall_time_s = wall_time_s;
  s.samples_per_s = double(step_ * c.global_batch()) / std::max(s.wall_time_s, 1e-9);
  s.comm_time_s = comm_s_;
  s.eval_time_s = eval_s_;
  s.compute_time_s = std::max(0.0, s.wall_time_s - comm_s_ - eval_s_);
  // The run's largest process: what a job must give each of its processes.
  const auto largest = [this](double mine) {  // NaN if unknown on any process
    for (const double p : comm_.all_workers(std::vector<double>(std::size_t(comm_.local_workers()), mine))) {
      mine = std::isnan(p) || std::isnan(mine) ? kNaN : std::max(mine, p);
    }
    return mine;
  };
  s.peak_rss_mib = largest(peak_memory_so_far());
  s.peak_gpu_mib = largest(peak_gpu_so_far());
  if (!r.eval.step.empty()) {
    s.final_test_accuracy = r.eval.test_accuracy.back();
    s.final_test_loss = r.eval.test_loss.back();
    s.final_val_accuracy = r.eval.val_accuracy.back();
    // Evaluations where the test split was not due hold NaN (test_every).
    s.best_test_accuracy = kNaN;
    for (const double a : r.eval.test_accuracy) {
      if (std::isfinite(a) && (std::isnan(s.best_test_accuracy) || a > s.best_test_accuracy)) s.best_test_accuracy = a;
    }
  } else {
    s.final_test_accuracy = s.final_test_loss = s.final_val_accuracy = s.best_test_accuracy = kNaN;
  }
  s.final_synced_test_accuracy = kNaN;
  for (std::size_t i = r.eval.step.size(); i-- > 0;) {
    if (r.eval.synced[i] != 0 && std::isfinite(r.eval.test_accuracy[i])) {
      s.final_synced_test_accuracy = r.eval.test_accuracy[i];
      break;
    }
  }
}

// Reads the losses of `rows` (the steps advanced since the last read) into
// the train series and reports each step, all but the last when `hold_last`
// (an evaluation follows, and reports it). Returns false when a loss is not
// finite: the series then end at that step, as the run does.
bool Trainer::record_unread(std::vector<UnreadStep>& rows, ProgressSink* progress, bool hold_last) {
  const RunConfig& c = config_;
  TrainSeries& tr = result_.train;
  const std::vector<std::vector<double>> losses = read_losses();
  if (losses.size() != rows.size()) {  // advance() called outside run() and not read before it
    throw Error("Trainer::run: " + std::to_string(losses.size()) + " steps' losses unread for " +
                std::to_string(rows.size()) + " steps of this run (read_losses() after advance())");
  }
  const std::int64_t total = total_steps();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const UnreadStep& u = rows[i];
    double loss = 0;
    for (const double l : losses[i]) loss += l;  // in worker order
    loss /= double(c.workers);
    tr.step.push_back(u.step);
    tr.epoch.push_back(double(u.step) / double(steps_per_epoch_));
    tr.loss.push_back(loss);
    tr.lr.push_back(u.lr);
    tr.samples.push_back(u.step * c.global_batch());
    tr.time_s.push_back(u.time_s);
    tr.comm_s.push_back(u.comm_s);
    tr.comm_bytes.push_back(u.comm_bytes);
    tr.worker_loss.insert(tr.worker_loss.end(), losses[i].begin(), losses[i].end());
    last_event_ = ProgressEvent{};
    last_event_.step = u.step;
    last_event_.total_steps = total;
    last_event_.epoch = int((u.step - 1) / steps_per_epoch_) + 1;
    last_event_.epochs = int((total + steps_per_epoch_ - 1) / steps_per_epoch_);  // max_steps may cut the last
    last_event_.loss = loss;
    last_event_.lr = u.lr;
    last_event_.elapsed_s = u.time_s;
    if (!std::isfinite(loss)) {
      // Steps after it ran before the host read this one: the run ends here all the same.
      SyncSeries& y = result_.syncs;
      std::size_t keep = 0;
      while (keep < y.step.size() && y.step[keep] <= u.step) ++keep;
      y.step.resize(keep);
      y.level.resize(keep);
      y.divergence.resize(keep);
      step_ = u.step;
      result_.summary.status = RunStatus::diverged;
      if (progress) progress->message("# diverged: the training loss is not finite at step " + std::to_string(u.step));
      rows.clear();
      return false;
    }
    loss_since_eval_ += loss;
    ++steps_since_eval_;
    if (progress && !(hold_last && i + 1 == rows.size())) progress->progress(last_event_);
  }
  rows.clear();
  return true;
}

RunResult Trainer::run(ProgressSink* progress, const CheckpointPolicy& checkpoint,
                       const std::function<bool(std::int64_t)>& beaten) {
  const RunConfig& c = config_;
  RunResult& r = result_;
  r.assignment = assignment_;
  r.sparsity = sparsity_;
  announce(progress);
  // Runs beside this one share the process: its peaks since it started.
  const at::Device device = data_.train_x.device();
  peak_reset_ = shared_process_ || reset_peak_memory();
  gpu_peak_reset_ = shared_process_ ? device.is_cuda() : reset_peak_device_memory(device);
  const auto t0 = Clock::now();
  auto elapsed = [&] { return elapsed_before_ + seconds_since(t0); };
  double last_checkpoint_s = elapsed();
  const std::int64_t total = total_steps();
  std::vector<UnreadStep> unread;
  // eval_growth's next step, found anew on a resume: the steps are fixed.
  std::int64_t growth_next = c.eval_growth > 0 ? growth_evaluation_after(step_, c.eval_growth) : -1;
  while (step_ < total) {
    const double lr = lr_->at(step_);
    advance();
    kill_point("step");
    fail_point("step");
    if (out_of_memory_point("step"))
      TORCH_CHECK_WITH(OutOfMemoryError, false, "injected: out of memory (DPSTUDY_TEST_OOM_AT)");
    TORCH_CHECK(!torch_error_point("step"), "injected: a LibTorch error (DPSTUDY_TEST_TORCH_ERROR_AT)");
    unread.push_back({step_, lr, elapsed(), comm_s_, comm_bytes_});
    const bool epoch_end = step_ % steps_per_epoch_ == 0, growth_due = step_ == growth_next;
    if (growth_due) growth_next = growth_evaluation_after(step_, c.eval_growth);
    // A step budget (max_steps) may end the run mid-epoch: it ends with an evaluation all the same.
    const bool eval_due = epoch_end || step_ == total || growth_due ||
                          (c.eval_every > 0 && step_ % c.eval_every == 0) || (c.eval_at_sync && averaged_world_);
    if (eval_due || std::int64_t(unread.size()) >= read_every_ || step_ == total) {
      if (!record_unread(unread, progress, eval_due)) break;
    }
    if (eval_due) {
      const bool test_due = c.test_every == 0 || step_ % c.test_every == 0 || epoch_end || step_ == total;
      ProgressEvent& ev = last_event_;
      const bool at_goal = evaluate_into(r, loss_since_eval_ / double(steps_since_eval_), test_due, elapsed());
      loss_since_eval_ = 0;
      steps_since_eval_ = 0;
      ev.evaluation = true;
      ev.test_accuracy = r.eval.test_accuracy.back();
      if (!val_idx_.empty()) ev.val_accuracy = r.eval.val_accuracy.back();
      ev.elapsed_s = elapsed();
      if (at_goal && progress) {
        char line[120];
        std::snprintf(line, sizeof line, "# goal error %g reached at step %lld", c.goal_error, (long long)step_);
        progress->message(line);
      }
      if (progress) progress->progress(ev);
      // Every process of the run evaluates at this step and asks; they agree,
      // as on a checkpoint, so that none trains on alone.
      if (beaten && r.summary.steps_to_goal < 0 && step_ < total && comm_.agree(beaten(step_) ? 1 : 0) != 0) {
        r.summary.status = RunStatus::beaten;
        if (progress) {
          progress->message("# beaten: another trial reached the goal by step " + std::to_string(step_));
        }
        break;
      }
    }
    if (c.stop_at_goal && r.summary.steps_to_goal >= 0) break;
    if (checkpoint.path.empty() || step_ == total) continue;
    // Each process's clock and signals differ: the run's processes decide
    // together (one small allreduce per step under MPI), else a kill could
    // leave checkpoints of two steps, which resume nothing.
    enum : int { kDue = 1, kStop = 2 };
    int flags = 0;
    if ((checkpoint.every_steps > 0 && step_ % checkpoint.every_steps == 0) ||
        (checkpoint.interval_s > 0 && elapsed() - last_checkpoint_s >= checkpoint.interval_s)) {
      flags |= kDue;
    }
    if (stop_requested()) flags |= kStop;
    flags = comm_.agree(flags);
    if (flags != 0) {
      if (!record_unread(unread, progress, false)) break;  // a checkpoint holds the series so far
      elapsed_before_ += seconds_since(t0);
      const auto c0 = Clock::now();
      save_checkpoint(checkpoint.path);
      checkpoint_s_ += seconds_since(c0);
      elapsed_before_ -= seconds_since(t0);
      last_checkpoint_s = elapsed();
    }
    if (flags & kStop) {
      r.summary.status = RunStatus::stopped;
      if (progress) progress->message("# stopped at step " + std::to_string(step_) + ", checkpointed");
      break;
    }
  }
  summarize(r, elapsed());
  return r;
}

}  // namespace dpstudy
