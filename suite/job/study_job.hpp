// A study's job, in steps: look at what is in <output>/<study>/runs/, schedule
// what is left on the job's processes (docs/mpi.md), train each run through its
// claim so that several jobs on one study train each run once (study_job.cpp,
// study_train.cpp), one run (study_run.cpp), then the index and the study's
// table (study_finish.cpp); complete runs' data, stack and build against this
// job's (study_provenance.cpp); search_stop = beaten (study_searches.cpp).
// Includes LibTorch's headers (job_context.hpp).
#pragma once

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "dpstudy/results.hpp"
#include "dpstudy/schedule.hpp"
#include "job_context.hpp"
#include "run_checkpoints.hpp"

namespace dpstudy {

// The steps to the goal that a complete run file's summary records for a
// completed run: what search_stop = beaten compares. -1 for another status, a
// goal not reached, or a file older than the attribute (study_searches.cpp).
std::int64_t completed_steps_to_goal(const h5::Group& summary);

// Lines to the console (by verbosity) and to the study's log file (all of
// them), whole, from any of the process's threads.
class Output {
 public:
  explicit Output(int verbosity) : verbosity_(verbosity) {}
  void open_log(const std::string& path) { log_.open(path, std::ios::app); }
  void line(const std::string& text, int level = 1);

 private:
  int verbosity_;
  std::mutex lock_;
  std::ofstream log_;
};

// The run this thread trains (run_one), to name it with its error when runs
// train at once (StudyJob::train_lanes).
extern thread_local std::string lane_run;

// Maps a run's fraction done and its own ETA (s) to the study's ETA (s).
using StudyEta = std::function<double(double, double)>;

class StudyJob {
 public:
  explicit StudyJob(Job& job);
  // The exit status: 0, 2 (runs of another job trained on other data files),
  // 3 (--expect_accuracy), 4 (--reproduce differs), 5 (stopped).
  int run();

 private:
  using Clock = std::chrono::steady_clock;
  enum : long long { kHeld = 0, kMine = 1, kStopping = 2 };  // the answers of run_one's `claim`

  bool to_run(std::size_t i) const { return options_.force || state_[i] != std::int64_t(RunFileState::complete); }
  std::int64_t stamp(const std::string& id) const;
  void look();
  // "file: the data files that differ" when `run`'s complete file (open as `f`) was
  // trained on other files than this job's; "" when the same, or either is unknown.
  std::string other_data(const PlannedRun& run, const std::string& file, const h5::File& f) const;
  // What of a run's software stack differs from this process's, as bits of `differ`.
  enum StackPart {
    kOtherLibTorch,
    kOtherBlas,
    kOtherCpuKernels,
    kOnTheCpu,       // the run's; this process is on a GPU
    kOnAGpu,         // the run's; this process is on the CPU
    kOnAnotherGpu,   // another model or compute capability
    kOtherGpuStack,  // the same GPU: another CUDA runtime, cuBLAS, cuDNN or setting of the environment
    kStackParts
  };
  // "LibTorch 1.13.0, OpenBLAS 0.3.21 ... Cooperlake ..." when the complete run file `f` was
  // made with another LibTorch or BLAS build, other CPU kernels, or on another GPU (", GPU
  // ..." then), than this process's; "" when the same or unknown. What differs is or-ed
  // into `differ` (bits 1 << StackPart).
  std::string other_stack(const h5::File& f, unsigned* differ) const;
  // The dpstudy build (version, commit, uncommitted changes) a run file names,
  // when it is not this one's as far as both tell; "" otherwise.
  std::string other_build(const h5::File& f) const;
  std::optional<std::int64_t> cost_left(std::size_t i) const;
  // search_stop = beaten: the fewest steps to the goal of a complete trial of
  // each search (PlannedRun::combination), and which run took them.
  struct Best {
    std::int64_t steps = 0;
    std::size_t run = 0;
  };
  void look_at_searches(std::vector<std::int64_t>& goal_steps, std::int64_t beaten_again);
  void beat(std::size_t run, std::int64_t steps);
  // Run i's cost left (`left`, in sample-gradients), bounded by its search's best (counted in bounded_by_best_).
  std::int64_t bounded_by_best(std::size_t i, std::int64_t left);
  // The rule Trainer::run asks at each evaluation (empty: none); learns first of the
  // trials of `run`'s search that other processes and jobs finished (learn_of_trials).
  std::function<bool(std::int64_t)> beaten_rule(std::size_t run);
  // A run ended: a trial that reached the goal sets its search's best. For a
  // beaten one, "; trial=3 reached the goal at step 120"; else "".
  std::string after_trial(std::size_t run, const RunSummary& summary);
  void learn_of_trials(std::size_t run);
  bool beaten_at(std::size_t run, std::int64_t step, Best* best) const;
  void make_schedule();
  void lane_schedule(DryRun& d) const;
  int planned_processes() const;
  DryRun dry_run() const;
  void prepare_folder();
  bool finished_elsewhere(std::size_t k) const;
  // finished_elsewhere, and if so whether on other data files (noted in other_data_seen_).
  bool done_elsewhere(std::size_t k);
  // done_elsewhere again for the runs passed while another group or job held
  // them: one stat each, before this process takes its next run.
  void look_at_passed();
  std::function<void()> heartbeat_of(std::size_t k);
  double elapsed_s() const { return std::chrono::duration<double>(Clock::now() - study_start_).count(); }
  void train();
  void train_dynamic();
  // `probe`: the one run of the largest batch, alone (train_lanes).
  void take_runs(const Block& b, bool final_look, bool probe = false);
  // --runs_at_once: threads of this process that each take runs as take_runs
  // does; on a GPU each launches on a stream of its own.
  void train_lanes(const Block& b);
  // A run that ran out of the GPU's memory beside others: fewer train at once
  // from now on, and false when it was alone (the job's error then).
  bool fewer_at_once(std::size_t run);
  // The runs this process trains at once after a first run alone measured
  // its peak GPU memory (--runs_at_once auto).
  int lanes_after_probe();
  // The run of positions (of one size) with the most samples per step on a
  // process, taken through `queue`; -1 when another job holds it.
  long long probe_position(const std::vector<std::size_t>& positions, ClaimQueue& queue);
  void train_static();
  std::unique_ptr<Trainer> start_or_resume(const PlannedRun& p, const TrainingData& d, Communicator& comm, int nprocs,
                                           bool leader, const std::string& ckpt, Output& o, const std::string& tag);
  bool run_one(const Placement& pl, const StudyEta& study_eta, const std::function<void()>& heartbeat,
               const std::function<long long()>& claim = {});
  // The index rebuilt until it lists every run file (another job may write one meanwhile).
  std::size_t reindex();
  struct RunTable {
    int failed_checks = 0;                    // runs that miss --expect_accuracy, or are not here to check
    std::size_t elsewhere = 0;                // runs without a file: another job's, still running
    std::vector<std::string> on_other_files;  // "file: differences" of runs trained on other data files
  };
  // The study's table of runs, from their files.
  RunTable print_run_table(bool stopped) const;
  int finish(bool stopped, bool mixed);

  Job& job_;
  const JobOptions& options_;  // the job's own options (not run keys), as given
  const Session& session_;
  std::vector<PlannedRun>& plan_;
  const std::filesystem::path runs_dir_;
  const RunCheckpoints checkpoints_;  // as the study starts
  const bool lead_;
  Output out_;
  std::vector<std::int64_t> state_;          // RunFileState per run, as the study starts
  std::vector<std::string> why_;             // what is wrong with a corrupt run file
  std::vector<std::int64_t> planned_stamp_;  // stamp() of each run file then
  std::size_t complete_ = 0;
  double measured_rate_ = 0;  // mean samples/s of the complete runs, for the estimate
  double complete_peak_gpu_mib_ = std::nan("");  // the most any complete run peaked at, for --dry_run
  std::vector<int> procs_;    // per run to do
  std::vector<std::size_t> todo_;  // the runs to do: their places in plan_
  std::vector<double> costs_;      // per run to do: its estimated cost
  std::vector<std::size_t> rounds_;  // per run to do: its round (PlannedRun::round)
  std::map<std::size_t, Best> best_;                           // per search, under lock_ (search_stop = beaten)
  std::map<std::size_t, std::vector<std::size_t>> trials_of_;  // per search: its runs
  std::map<std::size_t, std::int64_t> read_stamp_;             // runs whose new file learn_of_trials read
  std::size_t bounded_by_best_ = 0;  // runs to do whose cost their search's best bounds (bounded_by_best)
  bool dynamic_ = false;
  std::atomic<bool> stopped_{false};  // a run of this process stopped (stop.hpp)
  // What the runs a process trains at once share in it: the members below
  // and the steps of run_one around its training (building a model seeds
  // LibTorch's one generator). Each run's training holds none of it.
  mutable std::mutex lock_;
  Execution execution_;            // the job's, shared_process once runs train at once
  int lanes_ = 1;                  // runs this process trains at once now
  double last_peak_gpu_mib_ = 0;   // the last run's summary/peak_gpu_mib (the probe's)
  std::exception_ptr lane_error_;  // the first error of a run trained at once
  // TF32 is a switch of the whole process (cuBLAS, cuDNN): a tf32 run and a
  // run of another precision never train at once (run_one waits its turn).
  std::condition_variable precision_turn_;
  int tf32_runs_ = 0, other_runs_ = 0;  // training now
  // Runs that may train at once: lowered when one ran out of the GPU's memory
  // beside others (fewer_at_once); run_one waits its turn under it too.
  int allowed_ = std::numeric_limits<int>::max();
  // A run another job finished meanwhile on other data files (a first process
  // of a group saw it): this process's groups take no more runs.
  std::string other_data_seen_;
  // "# warning: ..." when complete runs came from another LibTorch or BLAS (lead process).
  std::string stack_note_;
  std::string build_note_;  // the same for another build of dpstudy
  Places places_;           // where each process computes; its note when they differ (a mixed partition)
  std::set<std::size_t> passed_;  // schedule positions found not finished, and not taken by this process
  std::vector<Placement> schedule_;
  std::vector<std::string> ids_;  // run ids in the schedule's order
  double makespan_ = 0, total_ = 0;  // estimated costs
  std::set<std::string> resumable_;  // runs with a complete set of checkpoints (lead process)
  std::map<int, std::vector<std::size_t>> of_size_;  // processes -> positions in the schedule
  std::unique_ptr<StudyIndex> index_;  // rewritten after each run this process leads, and at the end
  std::unique_ptr<ClaimQueue> queue_;
  double heartbeat_s_ = 60;
  Clock::time_point study_start_;
  double taken_work_ = 0;  // sample-gradients / processes of the runs this process has finished here
  // Results I/O against training time, as measured in this invocation (lead
  // process): run files, index rebuilds and checkpoints (docs/performance.md).
  double training_s_ = 0, results_io_s_ = 0;
};

}  // namespace dpstudy
