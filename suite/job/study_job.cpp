// A study's job: its output folder, its plan against what is there already,
// the schedule, a dry run, and how it ends. Training the runs: study_train.cpp.
#include "study_job.hpp"

#include <ATen/detail/CUDAHooksInterface.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>

#include "dpstudy/build_info.hpp"
#include "dpstudy/config.hpp"
#include "dpstudy/cuda_graphs.hpp"
#include "dpstudy/device_memory.hpp"
#include "dpstudy/error.hpp"
#include "dpstudy/hdf5.hpp"
#include "dpstudy/runtime_info.hpp"
#include "dpstudy/stop.hpp"

namespace fs = std::filesystem;

namespace dpstudy {

void Output::line(const std::string& text, int level) {
  const std::lock_guard<std::mutex> whole(lock_);
  if (level <= verbosity_) {
    std::printf("%s\n", text.c_str());
    std::fflush(stdout);
  }
  if (log_) log_ << utc_now() << " " << text << "\n" << std::flush;
}

StudyJob::StudyJob(Job& job)
    : job_(job),
      options_(job.request.options),
      session_(job.session),
      plan_(job.plan.runs),
      runs_dir_(fs::path(job.request.study_dir) / "runs"),
      checkpoints_(runs_dir_.string()),
      lead_(job.session.rank() == 0),
      out_(options_.quiet     ? 0
           : options_.verbose ? 2
                              : 1),
      execution_(job.execution) {}

int StudyJob::run() {
  places_ = gather_places(job_);
  look();
  make_schedule();
  if (options_.dry_run) {
    // Through lead_step like every step rank 0 takes alone, so that an error in
    // it would be printed once and end every process with its status.
    lead_step(session_, [&] { print_dry_run(dry_run()); });
    return 0;
  }
  prepare_folder();
  train();
  job_.current_run = "-";
  // Every process is through (this is also the barrier before the index).
  const bool stopped = session_.max(stopped_ || stop_requested() ? 1.0 : 0.0) > 0;
  const bool mixed = session_.max(other_data_seen_.empty() ? 0.0 : 1.0) > 0;
  // The others wait for the lead's end (the index, the table): an error there
  // (a full disk) is then printed once and ends them all alike.
  int status = 0;
  lead_step(session_, [&] { status = finish(stopped, mixed); });
  if (!stopped) return status;
  // All exit with the lead's status (5, or 0 when the job's other processes
  // finished every run meanwhile), after the index is written: under srun
  // --kill-on-bad-exit the first to exit ends the others.
  return int(session_.max(lead_ ? double(status) : 0.0));
}

// What a run file is now (0: none), to notice one that another job writes or
// rewrites meanwhile.
std::int64_t StudyJob::stamp(const std::string& id) const {
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
void StudyJob::look() {
  state_.assign(plan_.size(), std::int64_t(RunFileState::missing));
  why_.assign(plan_.size(), "");
  planned_stamp_.assign(plan_.size(), 0);
  std::vector<std::int64_t> left(plan_.size());
  for (std::size_t i = 0; i < plan_.size(); ++i) left[i] = plan_[i].cost;
  std::vector<std::int64_t> goal_steps(plan_.size(), -1);  // of complete runs that reached it
  std::int64_t beaten_again = 0;
  lead_step(session_, [&] {
    std::error_code ec;
    if (fs::is_directory(runs_dir_, ec)) check_results_schema(job_.request.study_dir);
    double rate_sum = 0;
    std::vector<std::string> on_other_files;  // complete runs trained on other files: "file: differences"
    std::map<std::string, std::size_t> other_stacks;  // complete runs made with another LibTorch or BLAS
    unsigned stack_parts = 0;                         // ... and what differs (StackPart bits)
    std::map<std::string, std::size_t> other_builds;  // ... or another build of dpstudy
    for (std::size_t i = 0; i < plan_.size(); ++i) {
      const std::string file = (runs_dir_ / (plan_[i].id + ".h5")).string();
      state_[i] = std::int64_t(inspect_run_file(file, &why_[i]));
      if (state_[i] != std::int64_t(RunFileState::missing)) planned_stamp_[i] = stamp(plan_[i].id);
      std::optional<h5::File> f;
      if (state_[i] == std::int64_t(RunFileState::complete)) {
        f.emplace(h5::File::open_read(file));
        const h5::Group summary = f->root().open_group("summary");
        if (job_.request.stop_beaten) goal_steps[i] = completed_steps_to_goal(summary);
        if (summary.get_string("status") == to_string(RunStatus::beaten) && !job_.request.stop_beaten) {
          state_[i] = std::int64_t(RunFileState::missing);  // not a whole run: trained again, from its start
          ++beaten_again;
        }
      }
      if (state_[i] == std::int64_t(RunFileState::complete)) {
        const h5::Group summary = f->root().open_group("summary");
        rate_sum += summary.get_double("samples_per_s");
        // NaN on the CPU; older files lack it.
        const double peak = summary.has_attr("peak_gpu_mib") ? summary.get_double("peak_gpu_mib") : std::nan("");
        if (std::isfinite(peak) && !(peak <= complete_peak_gpu_mib_)) complete_peak_gpu_mib_ = peak;
        ++complete_;
        if (std::string differ = other_data(plan_[i], file, *f); !differ.empty()) {
          on_other_files.push_back(std::move(differ));
        }
        if (std::string stack = other_stack(*f, &stack_parts); !stack.empty()) ++other_stacks[stack];
        if (std::string build = other_build(*f); !build.empty()) ++other_builds[build];
      }
      if (const auto rest = to_run(i) ? cost_left(i) : std::nullopt) {
        left[i] = *rest;
        resumable_.insert(plan_[i].id);
      }
    }
    if (complete_ > 0) measured_rate_ = rate_sum / double(complete_);
    // Not refused: such runs answer the same question, but their bits are another stack's.
    // "# warning: N of the M complete runs were made with WHAT (the most common, ...) than this process's ("
    const auto tally = [this](const std::map<std::string, std::size_t>& by, const char* what) {
      std::size_t n = 0;
      for (const auto& kv : by) n += kv.second;
      const auto most =
          std::max_element(by.begin(), by.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
      return "# warning: " + std::to_string(n) + " of the " + std::to_string(complete_) + " complete runs were made " +
             what + " (" + most->first + (by.size() > 1 ? ", and others" : "") + ") than this process's (";
    };
    if (!other_stacks.empty()) {
      static const char* const phrases[kStackParts] = {"with another LibTorch",
                                                       "with another BLAS build",
                                                       "with other CPU kernels",
                                                       "on the CPU",
                                                       "on a GPU",
                                                       "on another GPU",
                                                       "with other CUDA libraries or GPU settings"};
      std::string what;  // "with another LibTorch or with other CPU kernels"
      for (int part = 0; part < kStackParts; ++part) {
        if (stack_parts & (1u << part)) what += (what.empty() ? "" : " or ") + std::string(phrases[part]);
      }
      stack_note_ = tally(other_stacks, what.c_str()) + software_stack() + ", " + job_.cpu_kernels +
                    (job_.gpu == "none" ? "" : ", GPU " + job_.gpu) +
                    "): runs trained now will not reproduce theirs bit for bit, and the study pools both "
                    "(docs/studies.md#reproducing-a-run)";
    }
    if (!other_builds.empty()) {
      const BuildInfo b = build_info();
      build_note_ = tally(other_builds, "by another build of dpstudy") + build_line(b) +
                    "): if the code that trains changed, runs trained now differ from theirs, and the "
                    "study pools both (docs/studies.md#reproducing-a-run)";
    }
    // The runs trained now would be pooled with these in the study's results.
    if (!on_other_files.empty() && !options_.force) {
      throw UsageError(std::to_string(on_other_files.size()) + " complete run(s) of this study were trained on other "
                       "data files than those found now, e.g. " + on_other_files.front() + ". Runs trained now would "
                       "be pooled with them: use the files they were trained on (each run file's "
                       "provenance/dataset_checksums lists them), give the study another --name or --output, or train "
                       "every run again (--force)");
    }
  });
  session_.broadcast(state_);
  session_.broadcast(planned_stamp_);
  session_.broadcast(left);
  look_at_searches(goal_steps, beaten_again);
  for (std::size_t i = 0; i < plan_.size(); ++i) plan_[i].cost = bounded_by_best(i, left[i]);
}

// What run i has left to compute after the step of its complete set of
// checkpoints, so that the schedule and the estimates count what is left;
// nullopt without one (the run starts over). A job resumes only a set of its
// own processes per run; a dry run, which may have fewer processes than the
// job it watches, takes any layout's.
std::optional<std::int64_t> StudyJob::cost_left(std::size_t i) const {
  const PlannedRun& p = plan_[i];
  if (options_.force || !checkpoints_.listed(p.id)) return std::nullopt;
  std::set<int> layouts = options_.dry_run ? checkpoints_.layouts(p.id) : std::set<int>{};
  layouts.insert(procs_for_run(p.config, options_.procs_per_run, planned_processes()));
  for (const int procs : layouts) {
    if (const auto step = checkpoints_.set_step(p.id, procs)) {
      const std::int64_t global = p.config.global_batch();
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
void StudyJob::make_schedule() {
  for (std::size_t i = 0; i < plan_.size(); ++i) {
    const int p = procs_for_run(plan_[i].config, options_.procs_per_run, planned_processes());
    if (!to_run(i)) continue;
    todo_.push_back(i);
    costs_.push_back(double(plan_[i].cost));
    procs_.push_back(p);
    rounds_.push_back(plan_[i].round);
  }
  dynamic_ = options_.placement == "dynamic" && (procs_.empty() || sizes_nest(procs_, planned_processes()));
  const int world = planned_processes();
  schedule_ =
      dynamic_ ? schedule_nested(costs_, procs_, world, rounds_) : schedule_runs(costs_, procs_, world, rounds_);
  for (auto& pl : schedule_) {
    pl.run = todo_[pl.run];
    makespan_ = std::max(makespan_, pl.end);
    ids_.push_back(plan_[pl.run].id);
    total_ += double(plan_[pl.run].cost);
  }
}

// --dry_run with N runs at once: each process's N lanes take the next run as
// they become free, as train_lanes() does, so the runs are placed as on
// processes x N processes of one run each. Schedule rank v is lane v / processes
// of process v % processes: every process starts its first lane at once.
// auto on a GPU: as many lanes as the complete runs' peak memory predicts.
void StudyJob::lane_schedule(DryRun& d) const {
  const int n = job_.runs_at_once == 0 ? d.predicted_at_once : job_.runs_at_once;
  if (n < 2 || !dynamic_ || std::any_of(procs_.begin(), procs_.end(), [](int p) { return p != 1; })) return;
  const int world = planned_processes();
  d.schedule = schedule_nested(costs_, std::vector<int>(costs_.size(), 1), world * n, rounds_);
  d.lane.clear();
  for (Placement& pl : d.schedule) {
    pl.run = todo_[pl.run];
    d.lane.push_back(pl.ranks.front() / world);
    pl.ranks = {pl.ranks.front() % world};
  }
}

// The job planned for: this one, or in a dry run the one --dry_run_processes names.
int StudyJob::planned_processes() const {
  return options_.dry_run_processes > 0 ? options_.dry_run_processes : session_.size();
}

DryRun StudyJob::dry_run() const {
  DryRun d;
  d.request = &job_.request;
  d.plan = &job_.plan;
  d.state = state_;
  d.complete = complete_;
  d.measured_rate = measured_rate_;
  for (const auto& p : plan_) {
    const int run_procs = procs_for_run(p.config, options_.procs_per_run, planned_processes());
    d.side_by_side += resolve_parallelism(job_.execution.parallel, p.config.workers / run_procs, options_.threads,
                                          job_.device) == Parallelism::workers;
  }
  d.threads = options_.threads;
  d.device = job_.device.str();
  d.node_processes = session_.local_size();
  d.gpus = job_.device.is_cuda() ? int(at::detail::getCUDAHooks().getNumGPUs()) : 0;
  d.complete_peak_gpu_mib = complete_peak_gpu_mib_;
  if (job_.runs_at_once == 0 && d.gpus > 0 && std::isfinite(complete_peak_gpu_mib_)) {
    // As train_lanes() sizes them from its first run (lanes_after_probe), here from the largest complete one.
    d.predicted_at_once = runs_that_fit(device_memory_mib(job_.device), processes_per_gpu(d.node_processes, d.gpus),
                                        complete_peak_gpu_mib_);
  }
  const CudaGraphs graphs = parse_cuda_graphs(options_.cuda_graphs);
  for (const auto& p : plan_) d.graphed += graphs != CudaGraphs::off && why_not_graphed(p.config, job_.device).empty();
  d.processes = planned_processes();
  d.runs_at_once = job_.runs_at_once;
  d.data_notes = job_.data_notes;
  if (!stack_note_.empty()) d.data_notes.push_back(stack_note_);
  if (!build_note_.empty()) d.data_notes.push_back(build_note_);
  if (!places_.note.empty()) d.data_notes.push_back(places_.note);
  d.resumable = resumable_;
  d.bounded_by_best = bounded_by_best_;
  d.procs = procs_;
  d.schedule = schedule_;
  d.dynamic = dynamic_;
  lane_schedule(d);
  return d;
}

void StudyJob::prepare_folder() {
  lead_step(session_, [&] {  // the others wait for the folder
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
        if (entry.path().extension() == ".tmp" && ClaimQueue::is_stale(entry.path().string(), options_.claim_timeout)) {
          fs::remove(entry.path(), ec);
        }
      }
    }
    ClaimQueue::remove_stale_claims(runs_dir_.string(), options_.claim_timeout);
  });
  out_.open_log((fs::path(job_.request.study_dir) / "log.txt").string());
  if (lead_) {
    out_.line("# study " + job_.request.name + ": " + std::to_string(plan_.size()) + " runs, " +
              std::to_string(complete_) + " already complete; results in " + job_.request.study_dir + "; " +
              std::to_string(session_.size()) + " process(es)");
    for (const auto& note : job_.plan.notes) out_.line(note, 0);
    for (const auto& note : job_.data_notes) out_.line(note);  // information: not under --quiet
    if (!stack_note_.empty()) out_.line(stack_note_, 0);
    if (!build_note_.empty()) out_.line(build_note_, 0);
    if (!places_.note.empty()) out_.line(places_.note, 0);
    if (!options_.quiet) print_header(job_);
  }
}

int run_study(Job& job) { return StudyJob(job).run(); }

}  // namespace dpstudy
