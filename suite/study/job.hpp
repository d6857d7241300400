// One invocation of a workload executable (a "job"), from its command line to
// its runs. workload_main() takes it through one file per step:
//   front/front_end.cpp       the front end: the next two steps without LibTorch, then the engine
//   study/command_line.cpp    options and study file -> Request (the job's own options: job_options.cpp)
//   study/study_plan.cpp      Request -> the runs, each config resolved and checked
//   job/workload_main.cpp     the steps in turn; one run on the console
//   job/job_machine.cpp       device, threads, determinism
//   job/job_checks.cpp        data; each run checked before any trains
//   job/study_job.cpp         a study: what is done, the schedule (study_job.hpp)
//   job/study_train.cpp       its runs placed and claimed, several at once on a GPU
//   job/study_run.cpp         one of its runs: resumed or started, trained, written
//   job/study_finish.cpp      the index, the study's table, the checks asked for
//   job/study_provenance.cpp  complete runs' data files, software stack and build against this job's
//   job/run_checkpoints.cpp   the runs' checkpoint files and their sets
//   job/study_dry_run.cpp     --dry_run's tables
//   job/throughput_mode.cpp, study/reproduce.cpp: --mode throughput, --reproduce
//   job/job_context.cpp       what the steps share: a run's communicator, the job's header lines
// Private to the library; this header stays free of LibTorch's.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "dpstudy/model_factory.hpp"
#include "dpstudy/run_config.hpp"
#include "dpstudy/schedule.hpp"
#include "dpstudy/study.hpp"

namespace dpstudy {

struct Workload;

// The executable's own options (not run keys), as given.
struct JobOptions {
  std::string data_dir, study_file, output = "results", device = "auto", reproduce;
  bool deterministic = true;
  int threads = 0;
  std::string parallel = "auto";  // Parallelism, checked when the options are read
  std::string cuda_graphs = "off";  // CudaGraphs, checked when the options are read
  double expect_accuracy = -1;
  bool expect_given = false;  // --expect_accuracy given: a check to make
  bool quiet = false, verbose = false, force = false, dry_run = false, rebuild_index = false, verify_data = false;
  // Given, not their defaults: --reproduce takes the file's otherwise.
  bool threads_given = false, parallel_given = false, device_given = false;
  int procs_per_run = 0;
  int dry_run_processes = 0;  // --dry_run: plan for a job of this many processes (0: this job's)
  std::string placement = "dynamic";
  std::string runs_at_once = "1";  // N or auto: runs_at_once_count
  double checkpoint_interval = 300;
  std::int64_t checkpoint_steps = 0;
  double claim_timeout = 600;
  std::string mode = "train";
  std::int64_t warmup_steps = 0, iterations = 0;
  std::string profile;                       // throughput: a folder for each benchmark's Kineto trace ("" = none)
  std::vector<std::string> benchmark_flags;  // --benchmark_*, for Google Benchmark untouched
};

// --runs_at_once as a count: N (1 to 256), 0 for auto, -1 when it is neither.
int runs_at_once_count(const std::string& text);

// --reproduce: a run file's stored config as the values of a one-run study.
struct StoredRun {
  RawValues values;
  std::string run_id, study_text;
  std::int64_t trial = -1;          // a search trial's id, part of its run id
  std::int64_t beaten_at = -1;      // the step a beaten trial ended at (search_stop = beaten)
  std::vector<std::string> absent;  // options the file has no value for (newer than it)
  std::int64_t threads = 0;         // intra-op threads per process it ran with (provenance)
  std::string parallel;             // workers or operations; empty in files older than the option
  std::string device, gpu;          // where it trained (provenance: cpu, cuda:0; the GPU's description)
};

// What the command line and the study file ask for.
struct Request {
  JobOptions options;
  std::vector<std::string> keys;  // every run and model key of the workload
  std::vector<std::pair<std::string, std::vector<std::string>>> axes;  // declaration order, seeds last
  std::vector<std::string> swept;                                      // keys of more than one value
  std::vector<RawValues> trials;  // a search's trials; one empty one without a search
  bool searched = false;
  bool stop_beaten = false;  // search_stop = beaten (SearchSpec)
  std::vector<ExcludeRule> rules;
  std::string name, study_dir, study_text;
  bool study_mode = false;  // results in <output>/<name>/, or one run on the console
  StoredRun stored;         // with --reproduce
};

// nullopt when --help or --version asked for all there was to do; printed when
// `print` (under mpirun, by rank 0 alone).
std::optional<Request> read_request(int argc, char** argv, const Workload& workload, bool print = true);

struct PlannedRun {
  RawValues values;
  RunConfig config;
  KeyValues model_values;  // the workload's model_values() for this run
  ModelFactory factory;     // set by the engine (workload_model), empty in the front end
  KeyValues key_values;     // the config's, then the model's
  std::string id;
  std::int64_t cost = 0;  // sample-gradients: steps x W b; set once the data's size is known
  std::size_t cells = 1;  // combinations of the study this run stands for (> 1: a shared run)
  // Its seed's place among the study's seeds, times the search's trials, plus
  // its trial: runs go out round by round (schedule.hpp), so a study stopped
  // early holds whole replicates of its design, not all of some cells' seeds
  // or trials and none of the others'.
  std::size_t round = 0;
  // The place of its combination of the other axes among the study's: the
  // runs of one combination are the trials of one search (search_stop).
  std::size_t combination = 0;
};

struct Plan {
  std::vector<PlannedRun> runs;  // one per distinct run id
  std::size_t cells = 0;         // combinations planned (after --exclude): runs.size() less the shared
  std::size_t excluded = 0;      // combinations --exclude dropped
  std::vector<std::string> notes;  // "# warning: ..." lines: exclude rules that drop nothing
};

// The most combinations (axes x trials, before exclude rules) a study may have: planning
// them takes about 30 s here, far beyond the largest study shipped (4,000 runs).
inline constexpr std::size_t kMaxRunsPerStudy = 200000;

// Every combination resolved now: bad values are reported before anything runs.
// UsageError beyond kMaxRunsPerStudy combinations.
Plan plan_runs(const Request& request, const Workload& workload);

// "key=value ..." of the swept keys, "-" when none is.
std::string axes_text(const RawValues& values, const std::vector<std::string>& swept);

// The processes a run takes (--procs_per_run, or the default), checked against
// the job and the run's worker groups.
int procs_for_run(const RunConfig& c, int requested, int world);

StoredRun read_stored_run(const std::string& path, const std::string& workload, const std::vector<std::string>& keys);

// The --device a reproduction of `stored` (read from `path`) takes when none is
// given: its reference's kind, cpu or cuda; auto for files older than that record.
// UsageError for a GPU run where this dpstudy has no CUDA.
std::string reference_device(const std::string& path, const StoredRun& stored);
// The refusal of a GPU run's reproduction where no GPU can be had (`why`), naming the way on.
std::string no_gpu_for_reference(const std::string& path, const StoredRun& stored, const std::string& why);

// The verdict of --reproduce, printed by the study's lead process: 0 when every
// metric is the same bit for bit, 4 when any differs.
int report_reproduction(const std::string& reference, const StoredRun& stored, const std::string& id,
                        const std::string& runs_dir);

// --dry_run: what a study would do, printed by its lead process.
struct DryRun {
  const Request* request = nullptr;
  const Plan* plan = nullptr;
  std::vector<std::int64_t> state;  // RunFileState per run
  std::size_t complete = 0;         // runs with a complete file
  double measured_rate = 0;         // mean samples/s of the complete runs
  std::size_t side_by_side = 0;     // runs with their workers side by side (--parallel)
  int threads = 0, processes = 1;
  std::string device = "cpu";           // where the runs train ("cuda:0")
  int node_processes = 1, gpus = 0;     // this node's processes and GPUs (on a GPU: the packing)
  std::size_t graphed = 0;              // runs whose steps --cuda_graphs captures
  int runs_at_once = 1;                 // per process (--runs_at_once; 0: auto on a GPU)
  // auto on a GPU: the most GPU memory a complete run of the study peaked at (NaN:
  // none), and the runs at once per process it predicts (0: unknown until a run has).
  double complete_peak_gpu_mib = std::nan("");
  int predicted_at_once = 0;
  std::vector<std::string> data_notes;  // datasets not here, costs assumed
  std::set<std::string> resumable;      // run ids with checkpoints
  std::size_t bounded_by_best = 0;      // runs to do whose cost a complete trial at the goal bounds (search_stop)
  std::vector<int> procs;               // per run to do
  std::vector<Placement> schedule;
  std::vector<int> lane;  // per placement with runs at once: which of its process's lanes; else empty
  bool dynamic = false;
};
void print_dry_run(const DryRun& d);

}  // namespace dpstudy
