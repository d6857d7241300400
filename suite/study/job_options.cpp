// The job's own options: --help's General, Study, Search and Throughput
// sections, read into JobOptions, and their checks.
#include "job_options.hpp"

#include <boost/program_options.hpp>

#include <cmath>
#include <string>
#include <thread>

#include "dpstudy/build_info.hpp"
#include "dpstudy/error.hpp"
#include "dpstudy/run_config.hpp"

namespace po = boost::program_options;

namespace dpstudy {

void describe_job_options(JobDescriptions& d, JobOptions& g) {
  d.general.add_options()("help,h", "show this help")(
      "help_markdown", "print this help as Markdown tables, one per group of options (docs/options.md)")(
      "version", "print the version and the features of this build (MPI, CUDA), then exit")(
      "data_dir", po::value(&g.data_dir), "look here first for datasets (see docs/datasets.md)")(
      "verify_data", po::bool_switch(&g.verify_data),
      "train only on the official dataset files: each file's size and SHA-256 checked against the built-in "
      "manifest (datasets/manifest.tsv; the size alone where it records no SHA-256 yet) when it is loaded")(
      "threads", po::value(&g.threads)->default_value(0),
      "threads per process. 0: the cores it may run on; under mpirun, the node's cores shared among its "
      "processes, at most the cores a process is bound to. The bits depend on it only where a process has "
      "fewer workers than threads: see --parallel and docs/engine.md")(
      "parallel", po::value(&g.parallel)->default_value("auto"),
      "how a process uses its threads: workers, operations or auto. With workers, its workers run side by "
      "side, one thread each, so the bits do not depend on --threads. With operations, one worker runs at a "
      "time, each operation on all threads. Auto is workers when the process has at least as many workers as "
      "threads. On a GPU, workers puts each on a CUDA stream of its own, operations all on one, and auto is "
      "workers with 2 or more; the bits are the same. See docs/engine.md and docs/gpu.md")(
      "cuda_graphs", po::value(&g.cuda_graphs)->default_value("off"),
      "whole-step CUDA graphs on a GPU: on, auto or off. On refuses a run that cannot be graphed, with the "
      "reason; auto graphs the runs that qualify. The same bits either way; recorded in provenance "
      "(docs/gpu.md)")("device", po::value(&g.device)->default_value("auto"),
                       "auto (a GPU when there is one, each MPI process the GPU of its local rank), cpu or cuda")(
      "deterministic", po::value(&g.deterministic)->default_value(true),
      "deterministic algorithms (ATen, cuDNN); recorded in provenance")("quiet", po::bool_switch(&g.quiet),
                                                                        "print only results and errors")(
      "verbose", po::bool_switch(&g.verbose), "also print each run's config and data assignment")(
      "expect_accuracy", po::value(&g.expect_accuracy),
      "correctness check: exit 3 unless every run's final test accuracy is at least this fraction");
  d.study.add_options()("study", po::value(&g.study_file), "study file (INI); the command line wins over it")(
      "reproduce", po::value(&g.reproduce),
      "RUN_FILE.h5: train that run again from the config stored in it, under results/reproduce-<run id>, and "
      "compare every metric bit for bit (exit 4 when any differs)")(
      "name", po::value<std::string>(), "study name (default: the study file's name, or the workload's)")(
      "seeds", po::value<std::string>(), "a count n (seeds 1..n) or a list of seeds")(
      "global_batch", po::value<std::string>(),
      "samples per step over all workers, held while workers are swept: each run's batch_size is global_batch / "
      "workers (not with batch_size)")("exclude", po::value<std::string>(),
                                       "combinations to drop, e.g. \"sync_period=1 & overlap>0; workers=1\"")(
      "output", po::value(&g.output), "results root: <output>/<study>/ (default: results)")(
      "force", po::bool_switch(&g.force), "rerun runs that are already complete")(
      "dry_run", po::bool_switch(&g.dry_run), "print the run list and the estimated cost, run nothing")(
      "dry_run_processes", po::value(&g.dry_run_processes)->default_value(0),
      "with --dry_run: plan for a job of this many processes, as mpirun -n N would (a Slurm allocation's "
      "tasks, from a login node; 0: this job's)")("rebuild_index", po::bool_switch(&g.rebuild_index),
                                                  "rebuild <output>/<study>/index.h5 from the run files")(
      "checkpoint_interval", po::value(&g.checkpoint_interval)->default_value(300),
      "save a running run's full state every this many seconds (0: never)")(
      "checkpoint_steps", po::value(&g.checkpoint_steps)->default_value(0),
      "also every this many steps (0: not by steps)")(
      "procs_per_run", po::value(&g.procs_per_run)->default_value(0),
      "under mpirun: processes per run (0: the largest power of two <= min(workers, processes) dividing workers)")(
      "claim_timeout", po::value(&g.claim_timeout)->default_value(600),
      "several jobs on one study: seconds after which a claim on a run that its job stopped refreshing is "
      "stale and the run is taken over (docs/mpi.md)")(
      "runs_at_once", po::value(&g.runs_at_once)->default_value("1"),
      "runs each process trains at once, each in a thread of its own and every run on one process: N, or "
      "auto. On the CPU, auto is one per thread, each run on one thread. On a GPU, it is as many as fit in "
      "its memory, sized from the first run's peak. Each run's bits are those it has alone "
      "(docs/studies.md#runs-at-once)")(
      "placement", po::value(&g.placement)->default_value("dynamic"),
      "under mpirun: dynamic or static. With dynamic, groups of processes take the next run as they become "
      "free; with runs of several sizes, groups of the largest split as its runs run out. Static places "
      "them in advance from estimated costs (docs/mpi.md)");
  d.speed.add_options()("mode", po::value(&g.mode)->default_value("train"),
                        "train: run the study; throughput: time training steps per sweep point with Google Benchmark")(
      "warmup_steps", po::value(&g.warmup_steps)->default_value(0),
      "throughput: untimed steps before timing (0: one sync period)")(
      "iterations", po::value(&g.iterations)->default_value(0),
      "throughput: timed periods per benchmark (0: Google Benchmark decides; 10 under MPI)")(
      "profile", po::value(&g.profile),
      "throughput: after each benchmark's timed periods, at least 4 more steps under a Kineto trace, written to "
      "this folder as <benchmark>.json; needs a LibTorch with Kineto (docs/performance.md#profiles)");
  d.search.add_options()("search", po::value<std::string>(), "sobol, random or grid: trials per combination")(
      "trials", po::value<std::string>(), "search: trials per combination of the other axes")(
      "search_skip", po::value<std::string>(),
      "sobol: leading points skipped (default 0; Boost's sequence starts at 0.5, not the origin)")(
      "search_seed", po::value<std::string>(), "random: the generator's seed (default 1)")(
      "search_stop", po::value<std::string>(),
      "none or beaten; none by default. Beaten: a trial stops at an evaluation where another trial of its "
      "combination has reached the goal in as many steps or fewer, so the best trial's steps are those of "
      "the whole search (docs/studies.md#beaten-trials)")("search_lr", po::value<std::string>(), "LOW:HIGH, log scale")(
      "search_momentum", po::value<std::string>(), "LOW:HIGH, log scale in 1 - momentum")(
      "search_lr_end_factor", po::value<std::string>(), "LOW:HIGH, log scale")(
      "search_weight_decay", po::value<std::string>(), "LOW:HIGH, log scale")(
      "search_lr_decay_steps", po::value<std::string>(), "LOW:HIGH, whole steps");
}

int runs_at_once_count(const std::string& text) {
  if (text == "auto") return 0;
  if (text.empty() || text.size() > 3 || text.find_first_not_of("0123456789") != std::string::npos) return -1;
  const int n = std::stoi(text);
  return n >= 1 && n <= 256 ? n : -1;
}

void check_job_options(const JobOptions& g) {
  if (g.mode != "train" && g.mode != "throughput")
    throw ConfigError("mode", g.mode, "is not one of: train, throughput");
  if (g.procs_per_run < 0) {
    throw ConfigError("procs_per_run", std::to_string(g.procs_per_run), "must be >= 0 (0: the default)");
  }
  if (!(g.checkpoint_interval >= 0) || !std::isfinite(g.checkpoint_interval)) {
    throw ConfigError("checkpoint_interval", to_text(g.checkpoint_interval),
                      "must be a number of seconds >= 0 (0: never)");
  }
  if (g.checkpoint_steps < 0) {
    throw ConfigError("checkpoint_steps", std::to_string(g.checkpoint_steps), "must be >= 0 (0: not by steps)");
  }
  if (!(g.claim_timeout > 0) || !std::isfinite(g.claim_timeout)) {
    throw ConfigError("claim_timeout", to_text(g.claim_timeout), "must be a number of seconds > 0");
  }
  if (g.placement != "dynamic" && g.placement != "static") {
    throw ConfigError("placement", g.placement, "is not one of: dynamic, static");
  }
  if (runs_at_once_count(g.runs_at_once) < 0) {
    throw ConfigError("runs_at_once", g.runs_at_once, "must be a number of runs from 1 to 256, or auto");
  }
  if (g.runs_at_once != "1" && g.placement == "static") {
    throw UsageError("--runs_at_once " + g.runs_at_once +
                     " trains the next run as a thread of a process becomes "
                     "free: it needs --placement dynamic");
  }
  if (g.runs_at_once != "1" && g.mode == "throughput") {
    throw UsageError("--runs_at_once is for studies: --mode throughput times one sweep point at a time");
  }
  if (g.dry_run_processes < 0 || g.dry_run_processes > 1000000) {
    throw ConfigError("dry_run_processes", std::to_string(g.dry_run_processes),
                      "must be a number of processes from 1 to 1000000 (0: this job's)");
  }
  if (g.dry_run_processes > 0 && !g.dry_run) {
    throw UsageError("--dry_run_processes plans a job without running it: it needs --dry_run");
  }
  if (g.dry_run_processes > 1 && !build_info().with_mpi) {
    throw ConfigError("dry_run_processes", std::to_string(g.dry_run_processes),
                      "cannot be: this dpstudy was built without MPI, so its jobs have one process");
  }
  if (g.mode == "throughput" && g.dry_run) {
    throw UsageError("--dry_run does nothing in throughput mode: list its benchmarks with --benchmark_list_tests=true");
  }
  if (g.warmup_steps < 0) throw ConfigError("warmup_steps", std::to_string(g.warmup_steps), "must be >= 0");
  if (g.iterations < 0) throw ConfigError("iterations", std::to_string(g.iterations), "must be >= 0");
  if (!g.profile.empty() && g.mode != "throughput") {
    throw UsageError("--profile traces the steps of throughput mode: it needs --mode throughput");
  }
  if (!g.benchmark_flags.empty() && g.mode != "throughput") {
    throw UsageError("'" + g.benchmark_flags.front() + "' is a Google Benchmark flag: it needs --mode throughput");
  }
  if (g.threads < 0) throw ConfigError("threads", std::to_string(g.threads), "must be >= 0");
  const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  if (g.threads > 4 * cores) {  // OpenMP would start them all, and crawl
    throw ConfigError("threads", std::to_string(g.threads),
                      "is more than 4 threads per core of the " + std::to_string(cores) + " cores here");
  }
  if (g.device != "auto" && g.device != "cpu" && g.device != "cuda") {
    throw ConfigError("device", g.device, "is not one of: auto, cpu, cuda");
  }
  if (g.device == "cuda" && !build_info().with_cuda) {
    throw ConfigError("device", g.device,
                      "is not available: this dpstudy was built with DPSTUDY_WITH_CUDA=OFF (use --device cpu)");
  }
  if (g.expect_given && !(g.expect_accuracy >= 0 && g.expect_accuracy <= 1)) {  // 90 for 90 % fails every run
    throw ConfigError("expect_accuracy", to_text(g.expect_accuracy), "must be a fraction in [0, 1] (0.9 for 90 %)");
  }
}

}  // namespace dpstudy
