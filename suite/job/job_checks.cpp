// What a job checks before any run trains: its data, loaded once per dataset
// and the same on every process, and each planned run's placement, batch,
// precision, CUDA graphs and memory format. An error here names the run.
#include <ATen/Parallel.h>
#include <torch/version.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>

#include "dpstudy/cuda_graphs.hpp"
#include "dpstudy/dataset.hpp"
#include "dpstudy/error.hpp"
#include "dpstudy/file_io.hpp"
#include "dpstudy/manifest.hpp"
#include "dpstudy/precision.hpp"
#include "job_setup.hpp"

namespace dpstudy {
namespace {

// A check of one run: its option says it all for one run; in a sweep, which run.
void check_run(const std::vector<std::string>& swept, const PlannedRun& p, const std::function<void()>& check) {
  try {
    check();
  } catch (const ConfigError& e) {
    if (swept.empty()) throw;
    throw UsageError("the run " + axes_text(p.values, swept) + ": " + e.what());
  }
}

}  // namespace

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
  std::size_t budgeted = 0, cut = 0;  // runs with a max_steps; those it ends before their last epoch
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
        // A dry run (a login node, dpstudy-slurm's plan) needs no images: no float copy of them, none on a GPU.
        job.data[ds] = g.dry_run ? prepare_labels(train, test) : prepare_data(train, test, job.device);
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
                                   std::to_string(by_digest) + " of " + std::to_string(files) + " by size and SHA-256" +
                                   (by_digest < files ? ", the others by size (the manifest records no SHA-256 for "
                                                        "them yet)"
                                                      : std::string()));
        }
      } else {
        train_size[ds] = spec.official_train;
        job.data_notes.push_back("# " + ds + " was not found; costs assume its official " +
                                 std::to_string(spec.official_train) +
                                 " training images. A run needs the files: " + spec.obtain);
      }
    }
    const std::int64_t total = train_size[ds];
    const std::int64_t n = training_samples(p.config, total);
    const std::int64_t global = p.config.global_batch();
    check_global_batch(p.config, total, swept.empty() ? std::string() : "for " + axes_text(p.values, swept));
    // Not in a dry run: dpstudy-slurm plans on the submitting node with --device cpu.
    if (!g.dry_run) check_run(swept, p, [&] { check_precision(p.config.precision, job.device); });
    const std::int64_t steps_per_epoch = n / global;
    p.cost = p.config.run_steps(steps_per_epoch) * global;
    budgeted += p.config.max_steps > 0;
    cut += p.config.run_steps(steps_per_epoch) < steps_per_epoch * p.config.epochs;
    // A label-skewed assignment, or fewer medium blocks than owners, may leave
    // an owner without samples: found now, not when the run's turn comes (the
    // data decide, so only if they are here).
    if ((p.config.dirichlet_alpha > 0 || p.config.granularity == Granularity::medium) && job.data.count(ds)) {
      check_run(swept, p, [&] { (void)split_data(p.config, job.data[ds].train_y); });
    }
  }
  // A budget that ends no run changes nothing: said, as is how many it does end.
  const std::string of = std::to_string(budgeted) + " run(s) that have one";
  if (budgeted > 0 && cut == 0) {
    job.data_notes.push_back("# max_steps: ends none of the " + of + ": their epochs end first, so it changes nothing");
  } else if (budgeted > 0) {
    job.data_notes.push_back("# max_steps: ends " + std::to_string(cut) + " of the " + of + " before their last epoch" +
                             (cut < budgeted ? "; the others' epochs end first" : ""));
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
    throw DataError(where,
                    "these data files differ from rank 0's: " + differ +
                        ". Every process must read the "
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
void check_cuda_graphs(const Request& request, const Plan& plan, const at::Device& device) {
  const CudaGraphs mode = parse_cuda_graphs(request.options.cuda_graphs);
  for (const PlannedRun& p : plan.runs) {
    check_run(request.swept, p, [&] { (void)resolve_cuda_graphs(mode, p.config, device); });
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

}  // namespace dpstudy
