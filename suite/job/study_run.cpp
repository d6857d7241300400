// One run of a study on its processes: claimed, resumed from its checkpoints
// or started, trained, and written with its provenance.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "dpstudy/error.hpp"
#include "dpstudy/hdf5.hpp"
#include "dpstudy/progress.hpp"
#include "dpstudy/runtime_info.hpp"
#include "dpstudy/stop.hpp"
#include "study_job.hpp"

namespace dpstudy {

thread_local std::string lane_run = "-";

namespace {

// In-run progress with the run's place in the study: the study's ETA comes from
// the placement (see StudyJob::train_dynamic / train_static), given the run's
// fraction done and its own ETA.
class StudyProgress : public ProgressSink {
 public:
  StudyProgress(Output& out, std::string tag, std::function<double(double, double)> study_eta,
                std::function<void()> heartbeat = {}, double interval_s = 5.0)
      : out_(out),
        tag_(std::move(tag)),
        study_eta_(std::move(study_eta)),
        heartbeat_(std::move(heartbeat)),
        interval_(interval_s) {}
  void message(const std::string& line) override { out_.line(tag_ + line, 2); }
  void progress(const ProgressEvent& e) override {
    if (!e.evaluation && e.elapsed_s - last_ < interval_) return;
    last_ = e.elapsed_s;
    if (heartbeat_) heartbeat_();
    const double run_eta = e.step > 0 ? e.elapsed_s * double(e.total_steps - e.step) / double(e.step) : 0;
    const double study_eta = study_eta_(double(e.step) / double(std::max<std::int64_t>(e.total_steps, 1)), run_eta);
    const std::string acc = format_accuracy(e);
    char buf[300];
    std::snprintf(buf, sizeof buf, "%sepoch %d/%d  step %lld/%lld  loss %.4f%s  lr %.4g  run ETA %.0f s  study ETA %.0f s",
                  tag_.c_str(), e.epoch, e.epochs, (long long)e.step, (long long)e.total_steps, e.loss, acc.c_str(), e.lr,
                  run_eta, study_eta);
    out_.line(buf, 1);
  }

 private:
  Output& out_;
  std::string tag_;
  std::function<double(double, double)> study_eta_;
  std::function<void()> heartbeat_;  // keeps the run's claim live (ClaimQueue)
  double interval_, last_ = -1e9;
};

// Runs its action when the scope ends, however it ends.
struct TurnOver {
  std::function<void()> action;
  ~TurnOver() { action(); }
};

}  // namespace

// The run's trainer: from its checkpoints where every process of the run has one
// at the same step and can read it, else from the start.
std::unique_ptr<Trainer> StudyJob::start_or_resume(const PlannedRun& p, const TrainingData& d, Communicator& comm,
                                                   int nprocs, bool leader, const std::string& ckpt, Output& o,
                                                   const std::string& tag) {
  auto trainer = std::make_unique<Trainer>(p.config, p.factory, d, comm, execution_);
  // Resume only if every process of the run has its checkpoint at the same
  // step. Each reads the same files, but a read can fail on one alone (a
  // parallel file system): the processes agree, or they would train from
  // different steps, pair collectives of different steps, and hang at the end.
  bool resume = !options_.force && checkpoints_.set_step(p.id, nprocs).has_value();
  resume = comm.agree(resume ? 0 : 1) == 0;
  if (!resume && !options_.force && leader && checkpoints_.listed(p.id)) {
    o.line(tag + "its checkpoints are not a complete set for " + std::to_string(nprocs) +
           " process(es) at one step (made with another --procs_per_run, or a kill between their writes); "
           "starting over");
  }
  if (resume) {
    std::string failure;
    try {
      trainer->restore_checkpoint(ckpt);
    } catch (const Error& e) {
      failure = e.what();
    }
    if (comm.agree(failure.empty() ? 0 : 1) == 0) {
      o.line(tag + "resuming from its checkpoint at step " + std::to_string(trainer->current_step()));
    } else {
      o.line(tag + "checkpoint unusable (" + (failure.empty() ? "on another process of the run" : failure) +
             "); starting over");
      trainer = std::make_unique<Trainer>(p.config, p.factory, d, comm, execution_);
    }
  }
  return trainer;
}

namespace {

// ": completed, final test accuracy 85.13 %, 128.9 s" at the end of a run's line.
std::string how_it_ended(const RunSummary& sm) {
  char buf[200];
  if (std::isfinite(sm.final_test_accuracy)) {
    std::snprintf(buf, sizeof buf, ": %s, final test accuracy %.2f %%, %.1f s", to_string(sm.status).c_str(),
                  100 * sm.final_test_accuracy, sm.wall_time_s);
  } else {  // diverged, or ended where the test split was not due (test_every): where it ended says more
    std::snprintf(buf, sizeof buf, ": %s at step %lld, no test accuracy there, %.1f s", to_string(sm.status).c_str(),
                  (long long)sm.steps, sm.wall_time_s);
  }
  return buf;
}

}  // namespace

// One run on the processes pl.ranks (this one among them). `claim`, if given,
// is asked on the run's first process whether this job may train it (static
// placement: another job may hold it, or the job is stopping); kMine trains it.
// Everything but building and training the run holds lock_: other runs may
// train at once.
bool StudyJob::run_one(const Placement& pl, const StudyEta& study_eta, const std::function<void()>& heartbeat,
                       const std::function<long long()>& claim) {
  std::unique_lock<std::mutex> shared(lock_);
  const auto me = std::find(pl.ranks.begin(), pl.ranks.end(), session_.rank());
  const bool leader = me == pl.ranks.begin();
  const std::size_t i = pl.run;
  PlannedRun& p = plan_[i];
  job_.current_run = p.id;
  lane_run = p.id;
  const std::string tag = "[run " + std::to_string(i + 1) + "/" + std::to_string(plan_.size()) + "] ";
  const std::string file = (runs_dir_ / (p.id + ".h5")).string();
  const int nprocs = int(pl.ranks.size());
  const std::string ckpt = checkpoints_.path(p.id, nprocs, int(me - pl.ranks.begin()));
  const std::string axes_str = axes_text(p.values, job_.request.swept);
  Output quiet_out(0);
  Output& o = leader ? out_ : quiet_out;
  RunComm rc(pl.ranks, p.config.workers, int(i));
  if (claim) {
    long long answer = leader ? claim() : kHeld;
#if DPSTUDY_WITH_MPI
    if (rc.group) rc.group->broadcast(answer);
#endif
    if (answer == kStopping) return false;
    if (answer != kMine) {
      o.line(tag + p.id + " " + axes_str + ": another job holds it; left to that job");
      return false;
    }
  }
  const bool tf32 = p.config.precision == Precision::tf32;
  precision_turn_.wait(shared,
                       [&] { return (tf32 ? other_runs_ : tf32_runs_) == 0 && tf32_runs_ + other_runs_ < allowed_; });
  // Stopped while it waited its turn: a run of this process alone is left as
  // it is, its claim given up by take_runs (a group's processes agree on
  // stopping inside the run).
  if (!claim && nprocs == 1 && (stopped_ || stop_requested() || lane_error_)) return false;
  int& training_now = tf32 ? tf32_runs_ : other_runs_;
  ++training_now;
  const int runs_at_once = std::min(lanes_, allowed_);  // this process's, as the run starts
  const TurnOver turn_over{[&] {
    if (!shared.owns_lock()) shared.lock();
    --training_now;
    precision_turn_.notify_all();
  }};
  if (state_[i] == std::int64_t(RunFileState::corrupt) && leader) {
    o.line(tag + p.id + ": run file is corrupt (" + why_[i] + "); rerunning");
  }
  o.line(tag + p.id + " " + axes_str + ": starting" +
         (nprocs > 1 ? " on ranks " + std::to_string(pl.ranks.front()) + ".." + std::to_string(pl.ranks.back()) : ""));
  std::string config_line = tag + "# config:";
  for (const auto& [k, v] : p.key_values) config_line += " " + k + "=" + to_text(v);
  o.line(config_line, 2);
  const std::function<bool(std::int64_t)> beaten = beaten_rule(i);
  shared.unlock();  // the Trainer takes turns with other runs for LibTorch's generator itself
  const TrainingData& d = job_.data.at(p.config.dataset);
  std::unique_ptr<Trainer> trainer = start_or_resume(p, d, *rc.comm, nprocs, leader, ckpt, o, tag);
  RunRecord rec;
  rec.run_id = p.id;
  rec.study = job_.request.name;
  rec.workload = job_.workload;
  rec.started_utc = utc_now();
  rec.study_text = job_.request.study_text;
  rec.config = p.key_values;
  rec.workers = p.config.workers;
  StudyProgress progress(o, tag, study_eta, leader ? heartbeat : std::function<void()>());
  const CheckpointPolicy policy{ckpt, options_.checkpoint_interval, options_.checkpoint_steps};
  rec.result = trainer->run(&progress, policy, beaten);
  shared.lock();
  rec.finished_utc = utc_now();
  last_peak_gpu_mib_ = rec.result.summary.peak_gpu_mib;
  if (rec.result.summary.status == RunStatus::stopped) {
    o.line(tag + p.id + " " + axes_str + ": stopped by " + stop_cause() + " at step " +
           std::to_string(trainer->current_step()) + " of " + std::to_string(trainer->total_steps()) +
           (!options_.reproduce.empty() ? "; --reproduce trains it from its start each time"
            : options_.force            ? "; checkpointed, but --force starts every run over: run without it to resume"
                                        : "; its checkpoint resumes it when the study is started again"));
    stopped_ = true;
    return true;
  }
  const RunSummary& sm = rec.result.summary;
  const std::string beaten_by = after_trial(i, sm);  // on every process of the run: each asks the rule
  if (leader) {
    const auto io0 = Clock::now();
    rec.provenance = provenance(job_, places_, pl.ranks);
    rec.provenance.insert(rec.provenance.end(), {{"threads", std::int64_t(trainer->threads())},
                                                 {"parallel", to_string(trainer->parallelism())},
                                                 {"runs_at_once", std::int64_t(runs_at_once)},
                                                 {"cuda_graphs", trainer->cuda_graphs() ? "on" : "off"},
                                                 {"dataset_checksums", d.checksums()}});
    write_run_file(file, rec);
    checkpoints_.remove(p.id, nprocs);
    o.line(tag + p.id + " " + axes_str + how_it_ended(sm) + beaten_by);
    index_->rebuild(nullptr);
    results_io_s_ += std::chrono::duration<double>(Clock::now() - io0).count() + trainer->checkpoint_seconds();
    training_s_ += sm.wall_time_s;
  }
  taken_work_ += double(p.cost) / nprocs;
  return true;
}

}  // namespace dpstudy
