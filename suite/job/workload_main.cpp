// A workload's engine from its command line to its results: the request read
// (command_line.cpp) and planned (study_plan.cpp), each run's model built by
// the workload's model.cpp, then the device, the threads and the data set up
// here, and one run on the console, a study (study_job.cpp) or throughput mode
// (throughput_mode.cpp). The front end before it: front_end.cpp.
#include "dpstudy/workload.hpp"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/version.h>
#include <boost/program_options/errors.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <thread>

#include "dpstudy/build_info.hpp"
#include "dpstudy/cuda_graphs.hpp"
#include "dpstudy/dataset.hpp"
#include "dpstudy/error.hpp"
#include "dpstudy/file_io.hpp"
#include "dpstudy/manifest.hpp"
#include "dpstudy/model.hpp"
#include "dpstudy/precision.hpp"
#include "dpstudy/progress.hpp"
#include "dpstudy/results.hpp"
#include "dpstudy/runtime_info.hpp"
#include "dpstudy/schedule.hpp"
#include "job_context.hpp"

namespace dpstudy {

namespace {

void print_result(const RunResult& r) {
  const RunSummary& s = r.summary;
  std::printf("# result: %s\n", to_string(s.status).c_str());
  std::printf("# %-26s %14s  %s\n", "metric", "value", "unit");
  auto row = [](const char* name, double v, const char* unit) {
    if (v == std::floor(v) && std::fabs(v) < 1e15) {
      std::printf("  %-26s %14.0f  %s\n", name, v, unit);  // counts in full
    } else {
      std::printf("  %-26s %14.6g  %s\n", name, v, unit);
    }
  };
  row("final_test_accuracy", s.final_test_accuracy, "fraction");
  row("best_test_accuracy", s.best_test_accuracy, "fraction");
  row("final_test_loss", s.final_test_loss, "nats");
  row("final_val_accuracy", s.final_val_accuracy, "fraction");
  // Local SGD: the last model every worker held (eval_at_sync evaluates at each averaging).
  if (!r.syncs.step.empty()) row("final_synced_test_accuracy", s.final_synced_test_accuracy, "fraction");
  row("steps", double(s.steps), "steps");
  row("steps_per_epoch", double(s.steps_per_epoch), "steps");
  row("wall_time", s.wall_time_s, "s");
  row("samples_per_s", s.samples_per_s, "samples/s");
  row("compute_time", s.compute_time_s, "s");
  row("comm_time", s.comm_time_s, "s");
  row("eval_time", s.eval_time_s, "s");
  row("peak_rss", s.peak_rss_mib, "MiB");
  if (std::isfinite(s.peak_gpu_mib)) row("peak_gpu", s.peak_gpu_mib, "MiB");
  row("parameter_averagings", double(r.syncs.step.size()), "count");
  row("parameters", double(s.parameters), "count");
  if (s.steps_to_goal >= 0) row("steps_to_goal", double(s.steps_to_goal), "steps");
}

// cpu, or the GPU of this process's local rank when there is one (auto) or
// when asked (cuda, or a reproduction of a GPU run; an error without one).
at::Device resolve_device(const JobOptions& g, const StoredRun& stored, int local_rank) {
  // The name, and cuda on a build without it, were refused with the other options (command_line.cpp).
  const std::string& name = g.device;
  if (name == "cpu" || !DPSTUDY_CUDA) return at::kCPU;
  const int gpus = at::hasCUDA() ? at::detail::getCUDAHooks().getNumGPUs() : 0;
  if (gpus == 0) {
    if (name == "cuda") {
      const std::string why = "this LibTorch has no CUDA support or no GPU is visible";
      // Not asked for: the reproduced run's own device.
      if (!g.reproduce.empty() && !g.device_given) throw UsageError(no_gpu_for_reference(g.reproduce, stored, why));
      throw ConfigError("device", name, "is not available: " + why + " (use --device cpu)");
    }
    return at::kCPU;
  }
  return at::Device(at::kCUDA, at::DeviceIndex(local_rank % gpus));
}

// The CPU kernels LibTorch's own code picked, which decide the bits as the BLAS
// build decides a product's: ATen's vectorised level ("AVX2", "AVX512", "NO
// AVX", or "DEFAULT" in 2.11; by CPU kind, or ATEN_CPU_CAPABILITY) and oneDNN's
// version and instruction set (its convolutions; by CPU kind, or
// ONEDNN_MAX_CPU_ISA): "ATen AVX2, oneDNN 2.6.3 avx512_core_bf16". Runs
// reproduced here under ATEN_CPU_CAPABILITY=default, and a ResNet's under
// ONEDNN_MAX_CPU_ISA=AVX2, differed within their first steps. ATen's level from
// at::show_config(), which every LibTorch has (1.13 declares no
// at::get_cpu_capability); so is oneDNN's version where the library does not
// tell it itself (linked in with hidden symbols). "-" where none says.
std::string cpu_kernels() {
  const std::string config = at::show_config();
  // What follows `key` in show_config up to one of `ends`; "" where `key` is absent.
  const auto after = [&config](const std::string& key, const char* ends) -> std::string {
    const auto pos = config.find(key);
    if (pos == std::string::npos) return "";
    const auto from = pos + key.size();
    return config.substr(from, config.find_first_of(ends, from) - from);
  };
  std::string out;
  if (const std::string aten = after("CPU capability usage: ", "\n"); !aten.empty()) out = "ATen " + aten;
  std::string onednn = onednn_cpu_kernels();
  if (onednn.empty()) {  // "Intel(R) MKL-DNN v2.6.3 (...)" (1.13), "... (oneDNN) v3.5.3 (...)" (2.x)
    std::string built = after("MKL-DNN v", " \n");
    if (built.empty()) built = after("(oneDNN) v", " \n");
    if (!built.empty()) onednn = built + " (instruction set not told)";
  }
  if (!onednn.empty()) out += (out.empty() ? "" : ", ") + std::string("oneDNN ") + onednn;
  return out.empty() ? "-" : out;
}

// "none" on the CPU; on a GPU, the driver's description of it and the versions
// of the CUDA runtime, cuBLAS and cuDNN that compute ("NVIDIA H200, compute 9.0,
// CUDA 13.0, cuBLAS 13.1.0, cuDNN 9.19.0"): with LibTorch's version, what decides
// a GPU run's bits besides the config. Each library's version as the library
// loaded tells it; where it cannot (linked in statically), the one LibTorch was
// built with. Then the environment's settings of its arithmetic, where any is
// set ("...; NVIDIA_TF32_OVERRIDE=0"): with one stack, they decide whether
// convolutions and matrix products run in TF32. `driver`: the CUDA version the
// driver supports.
std::string gpu_identity(const at::Device& device, bool deterministic, std::string* driver) {
  *driver = "none";
  if (!device.is_cuda()) return "none";
  const CudaDriverInfo info = cuda_driver_info(device.has_index() ? device.index() : 0);
  *driver = info.driver;
  const CudaLibraryVersions loaded = cuda_library_versions();
  std::string cuda = loaded.runtime, cudnn = loaded.cudnn;
  try {
    const at::CUDAHooksInterface& hooks = at::detail::getCUDAHooks();
    if (cuda.empty()) cuda = cuda_version_text(hooks.versionCUDART());
    if (cudnn.empty() && hooks.compiledWithCuDNN()) cudnn = cudnn_version_text(hooks.versionCuDNN());
  } catch (const std::exception&) {
    if (cuda.empty()) cuda = "version not told by this LibTorch";
  }
  const std::string environment = gpu_arithmetic_environment(deterministic);
  return info.device + ", CUDA " + cuda + (loaded.cublas.empty() ? "" : ", cuBLAS " + loaded.cublas) +
         (cudnn.empty() ? "" : ", cuDNN " + cudnn) + (environment.empty() ? "" : "; " + environment);
}

// The message of an error: as one process prints it, or with the rank and
// host of the process that had it.
std::string error_message(const Session& session, const std::string& prog, const std::string& run,
                          const std::string& what, bool usage, bool with_rank) {
  std::string message = prog + ": error: ";
  if (with_rank) {
    message += "rank " + std::to_string(session.rank()) + " on " + session.host();
    message += (run == "-" ? std::string() : ", run " + run) + ": ";  // "-": between runs
  }
  message += what;
  if (usage) message += "\n(see " + prog + " --help)";
  return message;
}

// Reports an error and ends: alone, with `code`; in an MPI job of several
// processes, by aborting the whole job, so that no rank waits for this one.
int fail(const Session& session, const std::string& prog, const std::string& run, const std::string& what, int code,
         bool usage) {
  const std::string message = error_message(session, prog, run, what, usage, session.size() > 1);
  ClaimQueue::release_held();  // the run is free for another job at once
  if (session.size() > 1) session.abort(message, code);
  std::fprintf(stderr, "%s\n", message.c_str());
  return code;
}

// Ends the start alike on every process: they all go on, or all exit with one
// status. Each process reads the same command line, study file and (usually)
// data folder, so an error there is, as a rule, every process's: rank 0
// prints it once, as one process would, and every process exits without
// MPI_Abort, whose banners buried one message under N copies. An error of
// some processes only (a node without the data) is printed by each of them
// with its rank and host, and rank 0 says which ranks could not start. Every
// process must call this at the same point: it is a collective. One process
// alone prints its error as it is.
int agree_on_start(const Session& session, const std::string& prog, const JobEnded& mine) {
  const std::vector<std::string> all = session.all_gather(mine.text());
  const bool alike = std::all_of(all.begin(), all.end(), [&](const std::string& t) { return t == all.front(); });
  if (alike) {
    if (mine.code > 0 && session.rank() == 0) {
      std::fprintf(stderr, "%s\n", error_message(session, prog, "-", mine.what, mine.usage, false).c_str());
    }
    return mine.code;
  }
  int code = 0, failed = 0;
  std::string ranks;
  for (std::size_t r = 0; r < all.size(); ++r) {
    const int c = JobEnded::from_text(all[r]).code;
    if (c > 0) ranks += (failed++ ? ", " : "") + std::to_string(r);
    code = std::max(code, c);
  }
  if (mine.code > 0) {
    std::fprintf(stderr, "%s\n", error_message(session, prog, "-", mine.what, mine.usage, true).c_str());
  } else if (session.rank() == 0) {
    const std::string why = failed == 0 ? "the processes did not start alike (some were done, some not)"
                                        : std::to_string(failed) + " of " + std::to_string(all.size()) +
                                              " processes could not start (rank" + (failed > 1 ? "s " : " ") +
                                              ranks + ": " + (failed > 1 ? "their errors" : "its error") +
                                              " printed apart)";
    std::fprintf(stderr, "%s: error: %s; the job ends\n", prog.c_str(), why.c_str());
  }
  return std::max(code, 1);
}

// Threads per process: --threads, a reproduction's reference, or the cores
// this process may use; and how it uses them (--parallel).
void set_threads(JobOptions& g, const StoredRun& stored, const Session& session) {
  const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  // A reproduction computes as its reference did. Workers that stepped side by
  // side ran every operation on one thread: so does the reproduction, whatever
  // its threads. Operations spread over T threads (or a file older than
  // --parallel) need T again: OpenBLAS sums a long inner dimension in another
  // order with another thread count (docs/engine.md).
  const bool stored_side_by_side = stored.parallel == "workers";
  if (!g.reproduce.empty() && !g.parallel_given) {
    g.parallel = to_string(stored_side_by_side ? Parallelism::workers : Parallelism::operations);
  }
  if (!g.reproduce.empty() && !stored_side_by_side && !g.threads_given && stored.threads > 0) {
    if (stored.threads > 4 * cores) {
      throw UsageError("--reproduce: the run used " + std::to_string(stored.threads) +
                       " threads per process, more than 4 per core of the " + std::to_string(cores) +
                       " cores here; give --threads N, knowing that another thread count may change the bits");
    }
    g.threads = int(stored.threads);
  }
  if (g.threads > 0) {
    at::set_num_threads(g.threads);
  } else {
    // The cores of this node shared among its processes, so that they do not
    // oversubscribe; no more than this process may run on: Open MPI binds
    // each of up to 2 processes to one core by default. One process alone
    // takes every core it may run on (LibTorch's own default can be fewer:
    // 1 on this project's 2-core VM); its workers side by side, the bits do
    // not depend on it. Physical cores: two hardware threads of one core
    // (SMT) share its arithmetic units, and PyTorch counts so too.
    const int node_cores = physical_cores(online_cpu_list());
    const int my_cores = physical_cores(usable_cpu_list());
    at::set_num_threads(std::max(1, std::min(my_cores, node_cores / session.local_size())));
  }
  // The process's threads from here on; a Trainer with its workers side by
  // side sets LibTorch's own count to 1 while it trains.
  g.threads = at::get_num_threads();
}

// cuBLAS needs its workspace setting before its first use to be deterministic.
void set_deterministic(const at::Device& device) {
  if (device.is_cuda()) setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", 0);
  at::globalContext().setDeterministicAlgorithms(true, false);
  at::globalContext().setDeterministicCuDNN(true);
  at::globalContext().setBenchmarkCuDNN(false);
}

// A check of one run: its option says it all for one run; in a sweep, which run.
void check_run(const std::vector<std::string>& swept, const PlannedRun& p, const std::function<void()>& check) {
  try {
    check();
  } catch (const ConfigError& e) {
    if (swept.empty()) throw;
    throw UsageError("the run " + axes_text(p.values, swept) + ": " + e.what());
  }
}

// Data, once per dataset; then every run's cost, and W b <= N, before anything
// runs. A dry run plans without the files if they are not here (a login node).
void load_data(Job& job) {
  const JobOptions& g = job.request.options;
  const std::vector<std::string>& swept = job.request.swept;
  std::map<std::string, std::int64_t> train_size;
  LoadOptions load;
  load.data_dir = g.data_dir;
  // A dry run may be on a submitting node, without the compute nodes' folders: there a
  // --data_dir that is not here is a warning.
  if (!g.dry_run) check_data_dir_option("data_dir", g.data_dir);
  if (const std::string why = data_dir_problem(g.data_dir); !why.empty()) {
    job.data_notes.push_back("# warning: --data_dir " + g.data_dir + " " + why +
                             " here; the runs need it where they run");
  }
  // The variable may be set for another machine (a shared profile): the look-up then
  // goes on, as documented, but says so.
  const char* env = std::getenv("DPSTUDY_DATA_DIR");
  if (const std::string why = data_dir_problem(env ? env : ""); !why.empty()) {
    job.data_notes.push_back("# warning: DPSTUDY_DATA_DIR=" + std::string(env) + " " + why +
                             " here; datasets were looked for in the other folders (docs/datasets.md)");
  }
  for (auto& p : job.plan.runs) {
    const std::string& ds = p.config.dataset;
    if (!train_size.count(ds)) {
      const DatasetSpec& spec = dataset_spec(ds);
      bool here = true;
      if (g.dry_run) {
        try {
          find_dataset_dir(spec, Split::train, g.data_dir);
          find_dataset_dir(spec, Split::test, g.data_dir);
        } catch (const DataError&) {
          here = false;
        }
      }
      if (here) {
        // In this order, so that a dataset missing altogether is reported by its training split.
        const Dataset train = load_dataset(ds, Split::train, load);
        const Dataset test = load_dataset(ds, Split::test, load);
        job.data[ds] = prepare_data(train, test, job.device);
        train_size[ds] = job.data[ds].train_y.size(0);
        // Which folder of the look-up order answered (docs/datasets.md): a copy elsewhere
        // is not the one meant, and the run files record only the files' digests.
        job.data_notes.push_back("# data: " + ds + ": " + std::to_string(train.size()) + " training images from " +
                                 train.dir + ", " + std::to_string(test.size()) + " test images from " +
                                 (test.dir == train.dir ? std::string("there") : test.dir));
        if (g.verify_data) {  // a DataError naming the file and what differs, or a note of what was checked
          std::size_t by_digest = 0;
          for (const FileRecord& f : job.data[ds].files) {
            by_digest += Manifest::builtin().verify(ds, f) == Manifest::Check::match;
          }
          const std::size_t files = job.data[ds].files.size();
          job.data_notes.push_back("# data: " + ds + ": the official files (--verify_data): " +
                                   std::to_string(by_digest) + " of " + std::to_string(files) +
                                   " by size and SHA-256" +
                                   (by_digest < files ? ", the others by size (the manifest records no SHA-256 for "
                                                        "them yet)"
                                                      : std::string()));
        }
      } else {
        train_size[ds] = spec.official_train;
        job.data_notes.push_back("# " + ds + " was not found; costs assume its official " +
                                 std::to_string(spec.official_train) + " training images. A run needs the files: " +
                                 spec.obtain);
      }
    }
    const std::int64_t total = train_size[ds];
    const std::int64_t n = training_samples(p.config, total);
    const std::int64_t global = std::int64_t(p.config.workers) * p.config.batch_size;
    check_global_batch(p.config, total, swept.empty() ? std::string() : "for " + axes_text(p.values, swept));
    // Not in a dry run: dpstudy-slurm plans on the submitting node with --device cpu.
    if (!g.dry_run) check_run(swept, p, [&] { check_precision(p.config.precision, job.device); });
    p.cost = (n / global) * p.config.epochs * global;
    // A label-skewed assignment, or fewer medium blocks than owners, may leave
    // an owner without samples: found now, not when the run's turn comes (the
    // data decide, so only if they are here).
    if ((p.config.dirichlet_alpha > 0 || p.config.granularity == Granularity::medium) && job.data.count(ds)) {
      check_run(swept, p, [&] { (void)split_data(p.config, job.data[ds].train_y); });
    }
  }
}

// Each process reads the files it finds. Copies local to each node can differ
// (one node's scratch holding an older or partial copy): a run spread over the
// processes would mix data, or hang on a different number of steps. So every
// process compares its files with rank 0's and a differing one ends the job.
void check_same_data(const Job& job) {
  if (job.session.size() < 2 || job.request.options.dry_run) return;
  std::string mine, where;
  for (const auto& [name, d] : job.data) {
    mine += d.checksums();
    if (d.files.empty()) continue;
    const std::string& path = d.files.front().path;  // the folder, without std::filesystem (filesystem_imports.sh)
    where += (where.empty() ? "" : ", ") + path.substr(0, std::min(path.size(), path.rfind('/')));
  }
  std::vector<std::int64_t> bytes(mine.begin(), mine.end());
  job.session.broadcast(bytes);
  const std::string differ = checksum_differences(std::string(bytes.begin(), bytes.end()), mine, "on rank 0", "here");
  if (!differ.empty()) {
    throw DataError(where, "these data files differ from rank 0's: " + differ + ". Every process must read the "
                           "same files: copy them whole to every node, or give --data_dir a folder all nodes share");
  }
}

// Where each run goes is known at the start, so a run whose processes cannot
// host its workers is an error every process has there, agreed on and printed
// once (met later, in the study's schedule or a run's communicator, each process
// printed it and aborted the job).
void check_placement(const Request& request, const Plan& plan, int world) {
  const JobOptions& g = request.options;
  for (const PlannedRun& p : plan.runs) {
    if (request.study_mode || g.mode == "throughput") {
      (void)procs_for_run(p.config, g.procs_per_run, world);
      continue;
    }
    if (p.config.workers % world != 0) {  // one run outside a study takes every process of the job
      throw ConfigError("workers", std::to_string(p.config.workers),
                        "must be a multiple of the job's " + std::to_string(world) +
                            " processes: a run outside a study spreads its workers over all of them (a study, "
                            "with --output, places each run on --procs_per_run of them)");
    }
    (void)procs_for_run(p.config, world, world);  // its group_size against the workers per process
  }
}

// --runs_at_once: runs of one process each, or refused. On the CPU each run
// trains on one thread, and auto is one run per thread of the process; on a
// GPU auto stays 0 until a first run has measured its peak memory.
int resolve_runs_at_once(const Request& request, const Plan& plan, const at::Device& device, int world, JobOptions& g) {
  int n = runs_at_once_count(g.runs_at_once);
  if (n == 1 || !request.study_mode || plan.runs.size() < 2) return 1;
  for (const PlannedRun& p : plan.runs) {
    const int procs = procs_for_run(p.config, g.procs_per_run, world);
    if (procs == 1) continue;
    throw UsageError("--runs_at_once " + g.runs_at_once + " trains runs of one process each, and the run " +
                     (request.swept.empty() ? p.id : axes_text(p.values, request.swept)) + " is on " +
                     std::to_string(procs) + " processes: give --procs_per_run 1");
  }
#if TORCH_VERSION_MAJOR < 2
  // LibTorch 1's CUDA graphs capture in global mode: another thread's allocation breaks the capture.
  if (device.is_cuda() && parse_cuda_graphs(g.cuda_graphs) != CudaGraphs::off) {
    throw UsageError("--runs_at_once " + g.runs_at_once + " with --cuda_graphs " + g.cuda_graphs +
                     " needs LibTorch "
                     "2 or later, whose captures let other threads allocate; this is LibTorch " TORCH_VERSION
                     ": give --cuda_graphs off, or share the GPU among processes (docs/gpu.md#runs-per-gpu)");
  }
#endif
  if (!device.is_cpu()) return n;
  if (n == 0) n = g.threads;
  if (n > 1) {  // so that every thread a run starts computes on one
    at::set_num_threads(1);
    g.threads = 1;
  }
  return n;
}

// --cuda_graphs on for a run that cannot be graphed: refused, with the reason
// and the run, before any run trains.
void check_cuda_graphs(const Request& request, const Plan& plan, const at::Device& device, int world) {
  const JobOptions& g = request.options;
  const CudaGraphs mode = parse_cuda_graphs(g.cuda_graphs);
  for (const PlannedRun& p : plan.runs) {
    const int procs =
        request.study_mode || g.mode == "throughput" ? procs_for_run(p.config, g.procs_per_run, world) : world;
    check_run(request.swept, p, [&] { (void)resolve_cuda_graphs(mode, p.config, device, procs); });
  }
}

// --memory_format channels_last for a model without convolutions: refused
// before any run trains (a model of each such run built once, on the CPU).
void check_memory_formats(const Request& request, const Plan& plan) {
  for (const PlannedRun& p : plan.runs) {
    if (p.config.memory_format != MemoryFormat::channels_last) continue;
    check_run(request.swept, p, [&] { check_memory_format(p.config.memory_format, *p.factory()); });
  }
}

// One run, on the console only; under mpirun, on all processes.
int run_single(Job& job) {
  const JobOptions& g = job.request.options;
  const bool lead = job.session.rank() == 0;
  PlannedRun& p = job.plan.runs.front();
  job.current_run = p.id;
  if (!g.quiet && lead) {
    print_header(job);
    std::printf("# config:");
    for (const auto& [k, v] : p.key_values) std::printf(" %s=%s", k.c_str(), to_text(v).c_str());
    std::printf("\n");
  }
  if (lead) {
    for (const auto& note : job.plan.notes) std::printf("%s\n", note.c_str());
    if (!g.quiet) {
      for (const auto& note : job.data_notes) std::printf("%s\n", note.c_str());
    }
  }
  std::vector<int> world_ranks(static_cast<std::size_t>(job.session.size()));
  for (int r = 0; r < job.session.size(); ++r) world_ranks[std::size_t(r)] = r;
  RunComm rc(world_ranks, p.config.workers, 0);
  ConsoleProgress console;
  const RunResult result = train_run(p.config, p.factory, job.data.at(p.config.dataset), *rc.comm,
                                     g.quiet || !lead ? nullptr : &console, job.execution);
  if (!lead) return 0;
  print_result(result);
  if (!g.expect_given) return 0;
  const double acc = result.summary.final_test_accuracy;
  const bool ok = result.summary.status == RunStatus::completed && acc >= g.expect_accuracy;
  std::printf("# check: final test accuracy %.4f %s %.4f: %s\n", acc, ok ? ">=" : "<", g.expect_accuracy,
              ok ? "ok" : "FAILED");
  return ok ? 0 : 3;
}

int engine_main(int argc, char** argv, const Workload& workload, const std::string& prog) {
  const Session session;  // MPI, when launched by mpirun or srun
  std::string current_run = "-";
  // The start: the command line, the study, the device, the threads and the
  // data, on each process alone; then the processes agree, before the first
  // collective, that they all go on.
  std::optional<Request> request;
  Plan plan;
  std::map<std::string, TrainingData> data;
  std::optional<Job> job;
  bool done = false;  // --help, --version, --rebuild_index
  JobEnded start = ending_of([&] {
    request = read_request(argc, argv, workload, session.rank() == 0);
    if (!request) {  // --help, --version: under mpirun, printed once
      done = true;
      return;
    }
    JobOptions& g = request->options;
    if (g.rebuild_index) {
      if (session.rank() == 0) {  // under mpirun, once
        std::vector<std::string> skipped;
        const std::size_t n = rebuild_index(request->study_dir, request->name, &skipped);
        for (const auto& s : skipped) std::printf("# skipped corrupt run file: %s\n", s.c_str());
        std::printf("# rebuilt %s/index.h5: %zu runs\n", request->study_dir.c_str(), n);
      }
      done = true;
      return;
    }
    plan = plan_runs(*request, workload);
    check_placement(*request, plan, g.dry_run_processes > 0 ? g.dry_run_processes : session.size());
    for (PlannedRun& p : plan.runs) p.factory = workload_model(dataset_spec(p.config.dataset), p.model_values);
    check_memory_formats(*request, plan);
    const at::Device device = resolve_device(g, request->stored, session.local_rank());
    // Not in a dry run: dpstudy-slurm plans on the submitting node with --device cpu.
    if (!g.dry_run) check_cuda_graphs(*request, plan, device, session.size());
    std::string gpu_driver;
    const std::string gpu = gpu_identity(device, g.deterministic, &gpu_driver);
    if (g.deterministic) set_deterministic(device);
    set_threads(g, request->stored, session);
    const int runs_at_once =
        resolve_runs_at_once(*request, plan, device, g.dry_run_processes > 0 ? g.dry_run_processes : session.size(), g);
    job.emplace(Job{session,
                    *request,
                    plan,
                    data,
                    {},
                    device,
                    gpu,
                    gpu_driver,
                    cpu_kernels(),
                    Execution{parse_parallelism(g.parallel), g.threads, 0, parse_cuda_graphs(g.cuda_graphs)},
                    prog,
                    workload.name,
                    argc,
                    argv,
                    current_run,
                    runs_at_once});
    load_data(*job);
  });
  if (done && start.code == JobEnded::go_on) start.code = 0;
  if (const int code = agree_on_start(session, prog, start); code != JobEnded::go_on) return code;
  // A collective: every process compares its data files with rank 0's.
  start = ending_of([&] { check_same_data(*job); });
  if (const int code = agree_on_start(session, prog, start); code != JobEnded::go_on) return code;
  try {
    const JobOptions& g = request->options;
    if (g.mode == "throughput") return run_throughput_mode(*job);
    if (!request->study_mode) return run_single(*job);
    return run_study(*job);
  } catch (const JobEnded& e) {  // rank 0's error, which every process learnt of
    if (session.rank() == 0) {
      std::fprintf(stderr, "%s\n", error_message(session, prog, "-", e.what, e.usage, false).c_str());
    }
    return e.code;
  } catch (const boost::program_options::error& e) {
    return fail(session, prog, current_run, e.what(), 2, true);
  } catch (const UsageError& e) {
    return fail(session, prog, current_run, e.what(), 2, true);
  } catch (const c10::OutOfMemoryError& e) {  // alone on its device, or every run at once failed so
    return fail(session, prog, current_run,
                std::string(e.what_without_backtrace()) +
                    " (give a smaller batch_size, fewer workers per process or fewer --runs_at_once; "
                    "docs/studies.md#runs-at-once)",
                1, false);
  } catch (const c10::Error& e) {  // LibTorch's message, without its C++ backtrace
    return fail(session, prog, current_run, e.what_without_backtrace(), 1, false);
  } catch (const std::exception& e) {
    return fail(session, prog, current_run, e.what(), 1, false);
  }
}

}  // namespace

int workload_main(int argc, char** argv, const Workload& workload) {
  const std::string prog = "dpstudy-" + workload.name;
  return stdout_exit_status(prog, engine_main(argc, argv, workload, prog));
}

}  // namespace dpstudy
