// search_stop = beaten: each search's best trial, from the complete run files
// as the job starts, from the files other processes and jobs finish meanwhile,
// and from the runs this process finishes; the rule a run's trainer asks, and
// the cost a trial to do has left under it (docs/studies.md#beaten-trials).
#include <algorithm>

#include "dpstudy/error.hpp"
#include "dpstudy/hdf5.hpp"
#include "study_job.hpp"

namespace dpstudy {

std::int64_t completed_steps_to_goal(const h5::Group& summary) {
  if (summary.get_string("status") != "completed" || !summary.has_attr("steps_to_goal")) return -1;
  return summary.get_int("steps_to_goal");
}

// search_stop = beaten: each search's best from the complete runs (goal_steps,
// the lead process's); without it, the runs that ended beaten are said to train again.
void StudyJob::look_at_searches(std::vector<std::int64_t>& goal_steps, std::int64_t beaten_again) {
  if (!job_.request.stop_beaten) {
    if (beaten_again > 0) {
      out_.line("# " + std::to_string(beaten_again) +
                    " run(s) ended beaten under search_stop = beaten, which this "
                    "study no longer sets: they train again from their start (docs/studies.md#beaten-trials)",
                0);
    }
    return;
  }
  session_.broadcast(goal_steps);
  for (std::size_t i = 0; i < plan_.size(); ++i) {
    trials_of_[plan_[i].combination].push_back(i);
    if (goal_steps[i] >= 0) beat(i, goal_steps[i]);
  }
}

// search_stop = beaten: a trial to run whose search has a complete trial at the
// goal in B steps ends by step B, at its goal or beaten at its evaluation there
// (the trials of a search differ in searched keys only, so they share their
// evaluations), if it stops at its goal. So it has at most B steps to compute:
// the estimates count the rule, and the schedule, largest cost first within a
// round, takes it later. A trial checkpointed at or after step B trains on to
// its next evaluation: `left` bounds it.
std::int64_t StudyJob::bounded_by_best(std::size_t i, std::int64_t left) {
  const PlannedRun& p = plan_[i];
  const auto it = best_.find(p.combination);
  if (it == best_.end() || !to_run(i) || !p.config.stop_at_goal) return left;
  const std::int64_t global = p.config.global_batch();
  const std::int64_t done = p.cost - left;  // the samples before its checkpoint
  const std::int64_t to_best = it->second.steps * global - done;
  if (to_best <= 0 || to_best >= left) return left;
  ++bounded_by_best_;
  return to_best;
}

void StudyJob::beat(std::size_t run, std::int64_t steps) {
  const auto [at, fresh] = best_.emplace(plan_[run].combination, Best{steps, run});
  if (!fresh && steps < at->second.steps) at->second = Best{steps, run};
}

// Another process's or job's runs of `run`'s search that finished since the
// plan: one stat per trial, and a read of each new complete file.
void StudyJob::learn_of_trials(std::size_t run) {
  for (const std::size_t j : trials_of_[plan_[run].combination]) {
    const std::int64_t now = stamp(plan_[j].id);
    if (now == 0 || now == planned_stamp_[j]) continue;
    const auto [seen, fresh] = read_stamp_.emplace(j, now);
    if (!fresh && seen->second == now) continue;  // read already, unchanged since
    seen->second = now;
    const std::string file = (runs_dir_ / (plan_[j].id + ".h5")).string();
    try {
      if (inspect_run_file(file, nullptr) != RunFileState::complete) continue;
      const h5::Group summary = h5::File::open_read(file).root().open_group("summary");
      if (const std::int64_t steps = completed_steps_to_goal(summary); steps >= 0) beat(j, steps);
    } catch (const Error&) {  // a file damaged meanwhile beats no one
    }
  }
}

// search_stop = beaten: whether a trial of `run`'s search has reached the goal
// by `step` (`best`, if given, then holds that trial).
bool StudyJob::beaten_at(std::size_t run, std::int64_t step, Best* best) const {
  const auto it = best_.find(plan_[run].combination);
  if (it == best_.end() || it->second.steps > step) return false;
  if (best) *best = it->second;
  return true;
}

std::function<bool(std::int64_t)> StudyJob::beaten_rule(std::size_t run) {
  if (const std::int64_t at = job_.request.stored.beaten_at; at >= 0) {  // --reproduce of a beaten trial
    return [at](std::int64_t step) { return step >= at; };
  }
  if (!job_.request.stop_beaten) return {};
  learn_of_trials(run);
  return [this, run](std::int64_t step) {
    const std::lock_guard<std::mutex> best(lock_);  // other lanes set it as their runs end
    return beaten_at(run, step, nullptr);
  };
}

std::string StudyJob::after_trial(std::size_t run, const RunSummary& summary) {
  if (!job_.request.stop_beaten) return "";
  if (summary.status == RunStatus::completed && summary.steps_to_goal >= 0) beat(run, summary.steps_to_goal);
  Best b;
  if (summary.status != RunStatus::beaten || !beaten_at(run, summary.steps, &b)) return "";
  return "; " + axes_text(plan_[b.run].values, {"trial"}) + " reached the goal at step " + std::to_string(b.steps);
}

}  // namespace dpstudy
