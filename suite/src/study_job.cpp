// A study: its runs under <output>/<study>/runs/, resumed where they stopped,
// placed on the job's processes (docs/mpi.md), each taken through its claim so
// that several jobs on one study train each run once, then indexed.
#include <ATen/Context.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "dpstudy/build_info.hpp"
#include "dpstudy/error.hpp"
#include "dpstudy/hdf5.hpp"
#include "dpstudy/progress.hpp"
#include "dpstudy/results.hpp"
#include "dpstudy/runtime_info.hpp"
#include "dpstudy/schedule.hpp"
#include "dpstudy/stop.hpp"
#include "job_context.hpp"

namespace fs = std::filesystem;

namespace dpstudy {
namespace {

using Clock = std::chrono::steady_clock;

// Lines to the console (by verbosity) and to the study's log file (all of them).
class Output {
 public:
  explicit Output(int verbosity) : verbosity_(verbosity) {}
  void open_log(const std::string& path) { log_.open(path, std::ios::app); }
  void line(const std::string& text, int level = 1) {
    if (level <= verbosity_) {
      std::printf("%s\n", text.c_str());
      std::fflush(stdout);
    }
    if (log_) log_ << utc_now() << " " << text << "\n" << std::flush;
  }

 private:
  int verbosity_;
  std::ofstream log_;
};

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

// The checkpoint files in `runs_dir` by run id, of any processes per run:
// <id>.ckpt.h5 (one process) and <id>.ckpt.r<rank>of<P>.h5. Listed once at the
// start of a study, not per run (a listing of a 4,000-run folder per run adds up).
std::map<std::string, std::vector<std::string>> checkpoints_by_run(const fs::path& runs_dir) {
  std::map<std::string, std::vector<std::string>> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(runs_dir, ec)) {
    const std::string name = entry.path().filename().string();
    const auto at = name.find(".ckpt.");
    if (at != std::string::npos && entry.path().extension() == ".h5") {
      out[name.substr(0, at)].push_back(entry.path().string());
    }
  }
  return out;
}

KeyValues provenance(const Job& job, const TrainingData& data, int processes, const Trainer& trainer) {
  const BuildInfo b = build_info();
  std::string command;
  for (int i = 0; i < job.argc; ++i) command += (i ? " " : "") + std::string(job.argv[i]);
  std::string checksums;
  for (const auto& f : data.files) {
    checksums += data.spec->name + "/" + f.name + " bytes=" + std::to_string(f.bytes) + " sha256=" + f.sha256 + "\n";
  }
  const BlasInfo blas = blas_info();
  return {{"dpstudy_version", b.version},
          {"git_commit", b.git_commit},
          {"compiler", b.compiler},
          {"build_type", b.build_type},
          {"libtorch", torch_version()},
          {"mpi_library", mpi_library_version()},
          {"hdf5", h5::library_version()},
          {"blas", blas.kind + " " + blas.library},
          {"hostname", host_name()},
          {"processes", std::int64_t(processes)},
          {"threads", std::int64_t(trainer.threads())},
          {"parallel", to_string(trainer.parallelism())},
          {"device", data.train_x.device().str()},
          {"deterministic", std::int64_t(job.request.options.deterministic)},
#if DPSTUDY_WITH_MPI
          {"mpi_cuda_aware", std::int64_t(mpi::cuda_aware())},
#endif
          {"command_line", command},
          {"dataset_checksums", checksums}};
}

// The signal this process received, or that another one did.
std::string stop_cause() {
  return *stop_signal_name() ? stop_signal_name() : "a signal to another process";
}

// Maps a run's fraction done and its own ETA (s) to the study's ETA (s).
using StudyEta = std::function<double(double, double)>;

class StudyJob {
 public:
  explicit StudyJob(Job& job)
      : job_(job),
        g_(job.request.options),
        session_(job.session),
        plan_(job.plan.runs),
        runs_dir_(fs::path(job.request.study_dir) / "runs"),
        lead_(job.session.rank() == 0),
        out_(g_.quiet ? 0 : g_.verbose ? 2 : 1) {}

  int run() {
    checkpoints_ = checkpoints_by_run(runs_dir_);  // as the study starts
    look();
    make_schedule();
    if (g_.dry_run) {
      if (lead_) print_dry_run(dry_run());
      return 0;
    }
    prepare_folder();
    train();
    job_.current_run = "-";
    // Every process is through (this is also the barrier before the index).
    const bool stopped = session_.max(stopped_ || stop_requested() ? 1.0 : 0.0) > 0;
    const int status = lead_ ? finish(stopped) : 0;
    if (!stopped) return status;
    // All exit with 5, after the index is written: under srun --kill-on-bad-exit
    // the first to exit ends the others.
    session_.barrier();
    return 5;
  }

 private:
  bool to_run(std::size_t i) const { return g_.force || state_[i] != std::int64_t(RunFileState::complete); }

  // What a run file is now (0: none), to notice one that another job writes or
  // rewrites meanwhile.
  std::int64_t stamp(const std::string& id) const {
    struct stat st {};
    if (::stat((runs_dir_ / (id + ".h5")).c_str(), &st) != 0) return 0;
    const std::string text = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" +
                             std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) + ":" +
                             std::to_string(st.st_size);
    return std::int64_t(std::hash<std::string>()(text) | 1);  // never 0
  }

  // Rank 0 looks at what is there, once per run file that exists (no stat per
  // run per process on a parallel file system), and what the runs with
  // checkpoints have left, and tells the others.
  void look() {
    state_.assign(plan_.size(), std::int64_t(RunFileState::missing));
    why_.assign(plan_.size(), "");
    planned_stamp_.assign(plan_.size(), 0);
    std::vector<std::int64_t> left(plan_.size());
    for (std::size_t i = 0; i < plan_.size(); ++i) left[i] = plan_[i].cost;
    if (lead_) {
      std::error_code ec;
      if (fs::is_directory(runs_dir_, ec)) check_results_schema(job_.request.study_dir);
      double rate_sum = 0;
      for (std::size_t i = 0; i < plan_.size(); ++i) {
        const std::string file = (runs_dir_ / (plan_[i].id + ".h5")).string();
        state_[i] = std::int64_t(inspect_run_file(file, &why_[i]));
        if (state_[i] == std::int64_t(RunFileState::complete)) {
          const h5::File f = h5::File::open_read(file);
          rate_sum += f.root().open_group("summary").get_double("samples_per_s");
          ++complete_;
        }
        if (state_[i] != std::int64_t(RunFileState::missing)) planned_stamp_[i] = stamp(plan_[i].id);
        if (const auto rest = to_run(i) ? cost_left(i) : std::nullopt) {
          left[i] = *rest;
          resumable_.insert(plan_[i].id);
        }
      }
      if (complete_ > 0) measured_rate_ = rate_sum / double(complete_);
    }
    session_.broadcast(state_);
    session_.broadcast(planned_stamp_);
    session_.broadcast(left);
    for (std::size_t i = 0; i < plan_.size(); ++i) plan_[i].cost = left[i];
  }

  // The checkpoint of a run on `procs` processes written by the one of group rank `rank`.
  std::string checkpoint_path(const std::string& id, int procs, int rank) const {
    const std::string name = procs == 1 ? id + ".ckpt.h5"
                                        : id + ".ckpt.r" + std::to_string(rank) + "of" + std::to_string(procs) + ".h5";
    return (runs_dir_ / name).string();
  }

  // The step of run `id`'s complete set of checkpoints for `procs` processes
  // (every one there, at one step); nullopt without one.
  std::optional<std::int64_t> set_step(const std::string& id, int procs) const {
    std::int64_t step = -1;
    for (int q = 0; q < procs; ++q) {
      std::int64_t s = -1;
      try {
        s = h5::File::open_read(checkpoint_path(id, procs, q)).root().get_int("step");
      } catch (const Error&) {
        return std::nullopt;  // missing or unreadable
      }
      if (step >= 0 && s != step) return std::nullopt;
      step = s;
    }
    return step;
  }

  // What run i has left to compute after the step of its complete set of
  // checkpoints, so that the schedule and the estimates count what is left;
  // nullopt without one (the run starts over). A job resumes only a set of its
  // own processes per run; a dry run, which may have fewer processes than the
  // job it watches, takes any layout's.
  std::optional<std::int64_t> cost_left(std::size_t i) const {
    const PlannedRun& p = plan_[i];
    const auto files = checkpoints_.find(p.id);
    if (g_.force || files == checkpoints_.end()) return std::nullopt;
    std::set<int> layouts = {procs_for_run(p.config, g_.procs_per_run, session_.size())};
    for (const std::string& f : g_.dry_run ? files->second : std::vector<std::string>{}) {
      int rank = 0, procs = 0;
      const std::string name = fs::path(f).filename().string();
      if (std::sscanf(name.c_str() + p.id.size(), ".ckpt.r%dof%d.h5", &rank, &procs) == 2 && procs > 1) {
        layouts.insert(procs);
      } else if (name == p.id + ".ckpt.h5") {
        layouts.insert(1);
      }
    }
    for (const int procs : layouts) {
      if (const auto step = set_step(p.id, procs)) {
        const std::int64_t global = std::int64_t(p.config.workers) * p.config.batch_size;
        return std::max<std::int64_t>(0, p.cost - *step * global);
      }
    }
    return std::nullopt;
  }

  // Processes per run, and the schedule of the runs still to do. Dynamic: groups
  // of P processes take the runs of their P in the schedule's order; with several
  // P, a group with none left splits (nested_blocks). The sizes must nest;
  // otherwise the static schedule uses every process (overlapping sets of ranks
  // over time).
  void make_schedule() {
    std::vector<std::size_t> todo;
    std::vector<double> costs;
    for (std::size_t i = 0; i < plan_.size(); ++i) {
      const int p = procs_for_run(plan_[i].config, g_.procs_per_run, session_.size());
      if (!to_run(i)) continue;
      todo.push_back(i);
      costs.push_back(double(plan_[i].cost));
      procs_.push_back(p);
    }
    dynamic_ = g_.placement == "dynamic" && (procs_.empty() || sizes_nest(procs_, session_.size()));
    const int world = session_.size();
    schedule_ = dynamic_ ? schedule_nested(costs, procs_, world) : schedule_runs(costs, procs_, world);
    for (auto& pl : schedule_) {
      pl.run = todo[pl.run];
      makespan_ = std::max(makespan_, pl.end);
      ids_.push_back(plan_[pl.run].id);
      total_ += double(plan_[pl.run].cost);
    }
  }

  DryRun dry_run() const {
    DryRun d;
    d.request = &job_.request;
    d.plan = &job_.plan;
    d.state = state_;
    d.complete = complete_;
    d.measured_rate = measured_rate_;
    for (const auto& p : plan_) {
      const int run_procs = procs_for_run(p.config, g_.procs_per_run, session_.size());
      d.side_by_side += resolve_parallelism(job_.execution.parallel, p.config.workers / run_procs, g_.threads,
                                            job_.device) == Parallelism::workers;
    }
    d.threads = g_.threads;
    d.processes = session_.size();
    d.data_notes = job_.data_notes;
    d.resumable = resumable_;
    d.procs = procs_;
    d.schedule = schedule_;
    d.dynamic = dynamic_;
    return d;
  }

  void prepare_folder() {
    if (lead_) {
      std::error_code ec;
      fs::create_directories(runs_dir_, ec);
      if (ec || access(runs_dir_.c_str(), W_OK) != 0) {
        throw UsageError(runs_dir_.string() + ": cannot create or write the results folder" +
                         (ec ? " (" + ec.message() + ")" : ""));
      }
      // Temporary files of writes that a kill interrupted (never complete, never
      // read) and claims of a killed job (their runs are to do again); another
      // job's that is still running stay (several jobs on one study, docs/mpi.md).
      for (const fs::path& dir : {runs_dir_, fs::path(job_.request.study_dir)}) {
        for (const auto& entry : fs::directory_iterator(dir, ec)) {
          if (entry.path().extension() == ".tmp" && ClaimQueue::is_stale(entry.path().string(), g_.claim_timeout)) {
            fs::remove(entry.path(), ec);
          }
        }
      }
      ClaimQueue::remove_stale_claims(runs_dir_.string(), g_.claim_timeout);
    }
    session_.barrier();
    out_.open_log((fs::path(job_.request.study_dir) / "log.txt").string());
    if (lead_) {
      out_.line("# study " + job_.request.name + ": " + std::to_string(plan_.size()) + " runs, " +
                std::to_string(complete_) + " already complete; results in " + job_.request.study_dir + "; " +
                std::to_string(session_.size()) + " process(es)");
      for (const auto& note : job_.plan.notes) out_.line(note, 0);
      if (!g_.quiet) print_header(job_.prog, g_.parallel);
    }
  }

  // A run whose file appeared or changed since the plan was done by another
  // group or job meanwhile.
  bool finished_elsewhere(std::size_t k) const {
    const std::int64_t now = stamp(ids_[k]);
    return now != 0 && now != planned_stamp_[schedule_[k].run];
  }

  // Keeps the claim on schedule position k live while its run trains.
  std::function<void()> heartbeat_of(std::size_t k) {
    last_beat_ = Clock::now();
    return [this, k] {
      if (std::chrono::duration<double>(Clock::now() - last_beat_).count() < heartbeat_s_) return;
      queue_->heartbeat(k);
      last_beat_ = Clock::now();
    };
  }

  double elapsed_s() const { return std::chrono::duration<double>(Clock::now() - study_start_).count(); }

  // The runs to do in the schedule's order, each taken through its claim.
  void train() {
    study_start_ = Clock::now();
    index_ = std::make_unique<StudyIndex>(job_.request.study_dir, job_.request.name);
    queue_ = std::make_unique<ClaimQueue>(runs_dir_.string(), ids_, g_.claim_timeout,
                                          [this](std::size_t k) { return finished_elsewhere(k); });
    heartbeat_s_ = std::min(60.0, g_.claim_timeout / 4);
    install_stop_handlers();
    if (dynamic_) {
      train_dynamic();
    } else {
      train_static();
    }
  }

  // Blocks of consecutive ranks, largest first: each takes the runs of its size,
  // then splits into the blocks of the next size (nested_blocks). Once every
  // process is through, the blocks form again, largest first, to take what
  // another job has left stale since a block split (its processes had nothing
  // else to do).
  void train_dynamic() {
    for (std::size_t k = 0; k < schedule_.size(); ++k) of_size_[int(schedule_[k].ranks.size())].push_back(k);
    const std::vector<Block> blocks = nested_blocks(procs_, session_.size(), session_.rank());
    for (const Block& b : blocks) take_runs(b, false);
    if (blocks.size() > 1) {
      for (const Block& b : blocks) take_runs(b, true);
    }
  }

  void take_runs(const Block& b, bool final_look) {
    const std::vector<std::size_t>& positions = of_size_.at(b.size);
    std::vector<std::string> size_ids;
    for (std::size_t k : positions) size_ids.push_back(ids_[k]);
    ClaimQueue size_queue(runs_dir_.string(), size_ids, g_.claim_timeout,
                          [&](std::size_t j) { return finished_elsewhere(positions[j]); });
    Placement mine;
    for (int r = b.first; r < b.first + b.size; ++r) mine.ranks.push_back(r);
    const bool first = session_.rank() == b.first;
#if DPSTUDY_WITH_MPI
    std::unique_ptr<mpi::RunGroup> group;
    if (b.size > 1) {
      group = std::make_unique<mpi::RunGroup>(
          mine.ranks, int(plan_.size()) + (final_look ? session_.size() : 0) + b.first);
    }
#else
    (void)final_look;
#endif
    for (;;) {
      long long j = !first || stopped_ || stop_requested() ? -1 : size_queue.next();
#if DPSTUDY_WITH_MPI
      if (group) group->broadcast(j);
#endif
      if (j < 0) break;
      const std::size_t k = positions[std::size_t(j)];
      mine.run = schedule_[k].run;
      const double work = double(plan_[mine.run].cost) / b.size;
      // As if every process worked at this one's rate so far: the study takes
      // total / processes of it. Which process has which run is not needed.
      const StudyEta eta = [this, work](double fraction, double run_eta) {
        const double done = taken_work_ + fraction * work;
        if (done <= 0) return 0.0;
        return std::max(run_eta, elapsed_s() * (total_ / (double(session_.size()) * done) - 1));
      };
      run_one(mine, eta, heartbeat_of(k));
      if (first) queue_->release(k);
    }
  }

  // Placed in advance; a run another job holds is left to it. Once a stop is
  // asked for, the first process of each run's ranks says so to the others.
  void train_static() {
    for (std::size_t k = 0; k < schedule_.size(); ++k) {
      const Placement& pl = schedule_[k];
      if (std::find(pl.ranks.begin(), pl.ranks.end(), session_.rank()) == pl.ranks.end()) continue;
      const StudyEta eta = [this, &pl](double fraction, double) {
        const double at = (pl.start + (pl.end - pl.start) * fraction) / std::max(makespan_, 1e-9);
        return at > 0 ? elapsed_s() * (1 - at) / at : 0.0;
      };
      const auto claim = [this, k] {
        if (stopped_ || stop_requested()) return kStopping;
        return queue_->take(k) ? kMine : kHeld;
      };
      const bool ran = run_one(pl, eta, heartbeat_of(k), claim);
      if (ran && session_.rank() == pl.ranks.front()) queue_->release(k);
    }
  }

  enum : long long { kHeld = 0, kMine = 1, kStopping = 2 };  // the answers of run_one's `claim`
  bool run_one(const Placement& pl, const StudyEta& study_eta, const std::function<void()>& heartbeat,
               const std::function<long long()>& claim = {});
  int finish(bool stopped);

  Job& job_;
  const JobOptions& g_;
  const Session& session_;
  std::vector<PlannedRun>& plan_;
  const fs::path runs_dir_;
  const bool lead_;
  Output out_;
  std::vector<std::int64_t> state_;          // RunFileState per run, as the study starts
  std::vector<std::string> why_;             // what is wrong with a corrupt run file
  std::vector<std::int64_t> planned_stamp_;  // stamp() of each run file then
  std::size_t complete_ = 0;
  double measured_rate_ = 0;  // mean samples/s of the complete runs, for the estimate
  std::vector<int> procs_;    // per run to do
  bool dynamic_ = false;
  bool stopped_ = false;  // a run of this process stopped (stop.hpp)
  std::vector<Placement> schedule_;
  std::vector<std::string> ids_;  // run ids in the schedule's order
  double makespan_ = 0, total_ = 0;  // estimated costs
  std::map<std::string, std::vector<std::string>> checkpoints_;
  std::set<std::string> resumable_;  // runs with a complete set of checkpoints (lead process)
  std::map<int, std::vector<std::size_t>> of_size_;  // processes -> positions in the schedule
  std::unique_ptr<StudyIndex> index_;  // rewritten after each run this process leads, and at the end
  std::unique_ptr<ClaimQueue> queue_;
  double heartbeat_s_ = 60;
  Clock::time_point study_start_, last_beat_;
  double taken_work_ = 0;  // sample-gradients / processes of the runs this process has finished here
  // Results I/O against training time, as measured in this invocation (lead
  // process): run files, index rebuilds and checkpoints (docs/performance.md).
  double training_s_ = 0, results_io_s_ = 0;
};

// One run on the processes pl.ranks (this one among them). `claim`, if given,
// is asked on the run's first process whether this job may train it (static
// placement: another job may hold it, or the job is stopping); kMine trains it.
bool StudyJob::run_one(const Placement& pl, const StudyEta& study_eta, const std::function<void()>& heartbeat,
                       const std::function<long long()>& claim) {
  const auto me = std::find(pl.ranks.begin(), pl.ranks.end(), session_.rank());
  const bool leader = me == pl.ranks.begin();
  const std::size_t i = pl.run;
  PlannedRun& p = plan_[i];
  job_.current_run = p.id;
  const std::string tag = "[run " + std::to_string(i + 1) + "/" + std::to_string(plan_.size()) + "] ";
  const std::string file = (runs_dir_ / (p.id + ".h5")).string();
  const int nprocs = int(pl.ranks.size());
  auto ckpt_of = [&](int group_rank) { return checkpoint_path(p.id, nprocs, group_rank); };
  const std::string ckpt = ckpt_of(int(me - pl.ranks.begin()));
  const std::string axes_str = axes_text(p.values, job_.request.swept);
  Output quiet_out(0);
  Output& o = leader ? out_ : quiet_out;
  std::error_code ec;
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
  if (state_[i] == std::int64_t(RunFileState::corrupt) && leader) {
    o.line(tag + p.id + ": run file is corrupt (" + why_[i] + "); rerunning");
  }
  o.line(tag + p.id + " " + axes_str + ": starting" +
         (nprocs > 1 ? " on ranks " + std::to_string(pl.ranks.front()) + ".." + std::to_string(pl.ranks.back()) : ""));
  std::string config_line = tag + "# config:";
  for (const auto& [k, v] : p.key_values) config_line += " " + k + "=" + to_text(v);
  o.line(config_line, 2);
  const TrainingData& d = job_.data.at(p.config.dataset);
  auto trainer = std::make_unique<Trainer>(p.config, p.factory, d, *rc.comm, job_.execution);
  // Resume only if every process of the run has its checkpoint at the same
  // step. Each reads the same files, but a read can fail on one alone (a
  // parallel file system): the processes agree, or they would train from
  // different steps, pair collectives of different steps, and hang at the end.
  bool resume = !g_.force && set_step(p.id, nprocs).has_value();
  resume = rc.comm->agree(resume ? 0 : 1) == 0;
  if (!resume && !g_.force && leader && checkpoints_.count(p.id)) {
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
    if (rc.comm->agree(failure.empty() ? 0 : 1) == 0) {
      o.line(tag + "resuming from its checkpoint at step " + std::to_string(trainer->current_step()));
    } else {
      o.line(tag + "checkpoint unusable (" + (failure.empty() ? "on another process of the run" : failure) +
             "); starting over");
      trainer = std::make_unique<Trainer>(p.config, p.factory, d, *rc.comm, job_.execution);
    }
  }
  RunRecord rec;
  rec.run_id = p.id;
  rec.study = job_.request.name;
  rec.workload = job_.workload;
  rec.started_utc = utc_now();
  rec.study_text = job_.request.study_text;
  rec.config = p.key_values;
  rec.workers = p.config.workers;
  StudyProgress progress(o, tag, study_eta, leader ? heartbeat : std::function<void()>());
  const CheckpointPolicy policy{ckpt, g_.checkpoint_interval, g_.checkpoint_steps};
  rec.result = trainer->run(&progress, policy);
  rec.finished_utc = utc_now();
  if (rec.result.summary.status == RunStatus::stopped) {
    o.line(tag + p.id + " " + axes_str + ": stopped by " + stop_cause() + " at step " +
           std::to_string(trainer->current_step()) + " of " + std::to_string(trainer->total_steps()) +
           (!g_.reproduce.empty() ? "; --reproduce trains it from its start each time"
            : g_.force            ? "; checkpointed, but --force starts every run over: run without it to resume"
                                  : "; its checkpoint resumes it when the study is started again"));
    stopped_ = true;
    return true;
  }
  if (leader) {
    const auto io0 = Clock::now();
    rec.provenance = provenance(job_, d, nprocs, *trainer);
    write_run_file(file, rec);
    for (int q = 0; q < nprocs; ++q) fs::remove(ckpt_of(q), ec);
    if (const auto old = checkpoints_.find(p.id); old != checkpoints_.end()) {
      for (const auto& f : old->second) fs::remove(f, ec);  // also another layout's
    }
    const RunSummary& sm = rec.result.summary;
    char buf[200];
    std::snprintf(buf, sizeof buf, ": %s, final test accuracy %.2f %%, %.1f s", to_string(sm.status).c_str(),
                  100 * sm.final_test_accuracy, sm.wall_time_s);
    o.line(tag + p.id + " " + axes_str + buf);
    std::vector<std::string> skipped;
    index_->rebuild(&skipped);
    results_io_s_ += std::chrono::duration<double>(Clock::now() - io0).count() + trainer->checkpoint_seconds();
    training_s_ += sm.wall_time_s;
  }
  taken_work_ += double(p.cost) / nprocs;
  return true;
}

// The lead process, once every process is through: the index, the study's
// table, the checks asked for; 5 when the study was stopped.
int StudyJob::finish(bool stopped) {
  std::error_code ec;
  std::vector<std::string> skipped;
  std::size_t indexed = index_->rebuild(&skipped);
  // Another job on this study may have written a run file while this one was
  // indexing, and its own index before this one's: index until none is missing.
  const auto run_files = [&] {
    std::size_t n = 0;
    for (const auto& entry : fs::directory_iterator(runs_dir_, ec)) {
      const std::string f = entry.path().filename().string();
      if (f.size() > 3 && f.compare(f.size() - 3, 3, ".h5") == 0 && f.find(".ckpt.") == std::string::npos) ++n;
    }
    return n;
  };
  for (int again = 0; again < 3 && run_files() > indexed + skipped.size(); ++again) {
    skipped.clear();
    indexed = index_->rebuild(&skipped);
  }
  for (const auto& sk : skipped) out_.line("# skipped corrupt run file in the index: " + sk);

  // The study's runs, from their files; a run without one is another job's, still running.
  int failed_checks = 0;
  std::size_t elsewhere = 0;
  const std::vector<std::string>& swept = job_.request.swept;
  std::printf("# %-16s  %-10s  %9s  %s\n", "run id", "status", "test acc", "axes");
  for (const auto& p : plan_) {
    const std::string file = (runs_dir_ / (p.id + ".h5")).string();
    if (!fs::exists(file, ec)) {
      ++elsewhere;
      std::printf("  %-16s  %-10s  %9s  %s\n", p.id.c_str(), stopped ? "not done" : "elsewhere", "-",
                  axes_text(p.values, swept).c_str());
      if (g_.expect_given) ++failed_checks;  // not checked here
      continue;
    }
    const h5::File f = h5::File::open_read(file);
    const h5::Group summary = f.root().open_group("summary");
    const double acc = summary.get_double("final_test_accuracy");
    const std::string status = summary.get_string("status");
    std::printf("  %-16s  %-10s  %8.2f%%  %s\n", p.id.c_str(), status.c_str(), 100 * acc,
                axes_text(p.values, swept).c_str());
    if (g_.expect_given && !(status == "completed" && acc >= g_.expect_accuracy)) ++failed_checks;
  }
  const std::string& name = job_.request.name;
  const std::string& study_dir = job_.request.study_dir;
  if (stopped) {
    out_.line("# study " + name + " stopped by " + stop_cause() + ": " + std::to_string(plan_.size() - elsewhere) +
                  " of " + std::to_string(plan_.size()) + " runs done, " + std::to_string(indexed) + " in " + study_dir +
                  "/index.h5; " +
                  (!g_.reproduce.empty() ? std::string("--reproduce starts over each time")
                   : g_.force            ? std::string("without --force, the same command resumes the others")
                            : std::string("the same command again resumes the others (those stopped from their "
                                          "checkpoints)")),
              0);
  } else if (elsewhere > 0) {
    out_.line("# study " + name + ": this job is done; " + std::to_string(elsewhere) + " of " +
                  std::to_string(plan_.size()) + " runs are still running in another job (their claims in " +
                  runs_dir_.string() + "), which indexes them when it finishes; " + std::to_string(indexed) +
                  " runs in " + study_dir + "/index.h5 now",
              0);
  } else {
    out_.line("# study " + name + " done: " + std::to_string(indexed) + " runs in " + study_dir + "/index.h5", 0);
  }
  if (training_s_ > 0) {
    char buf[200];
    std::snprintf(buf, sizeof buf, "# results I/O: %.3f s (run files, index, checkpoints) for %.3f s of training: %.2f %%",
                  results_io_s_, training_s_, 100 * results_io_s_ / training_s_);
    out_.line(buf, 0);
  }
  if (stopped) return 5;
  if (!g_.reproduce.empty()) {
    return report_reproduction(g_.reproduce, job_.request.stored, plan_.front().id, runs_dir_.string());
  }
  if (g_.expect_given) {
    std::printf("# check: %d run(s) below %.4f final test accuracy: %s\n", failed_checks, g_.expect_accuracy,
                failed_checks ? "FAILED" : "ok");
    return failed_checks ? 3 : 0;
  }
  return 0;
}

}  // namespace

int run_study(Job& job) { return StudyJob(job).run(); }

}  // namespace dpstudy
