#include "dpstudy/workload.hpp"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <boost/program_options.hpp>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <set>
#include <thread>

#include "dpstudy/build_info.hpp"
#include "dpstudy/communicator.hpp"
#include "dpstudy/config.hpp"
#include "dpstudy/dataset.hpp"
#include "dpstudy/error.hpp"
#include "dpstudy/hdf5.hpp"
#include "dpstudy/options.hpp"
#include "dpstudy/progress.hpp"
#include "dpstudy/results.hpp"
#include "dpstudy/runtime_info.hpp"
#include "dpstudy/schedule.hpp"
#include "dpstudy/study.hpp"
#include "dpstudy/throughput.hpp"
#include "dpstudy/trainer.hpp"
#if DPSTUDY_WITH_MPI
#include "dpstudy/mpi.hpp"
#endif

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace dpstudy {
namespace {

using Clock = std::chrono::steady_clock;

#if DPSTUDY_WITH_MPI
using Session = mpi::Session;
#else
// Without MPI: one process.
struct Session {
  bool active() const { return false; }
  int rank() const { return 0; }
  int size() const { return 1; }
  int local_size() const { return 1; }
  int local_rank() const { return 0; }
  std::string host() const { return ""; }
  [[noreturn]] void abort(const std::string& message, int code) const {
    std::fprintf(stderr, "%s\n", message.c_str());
    std::exit(code);
  }
  void barrier() const {}
  void broadcast(std::vector<std::int64_t>&) const {}
  double max(double value) const { return value; }
};
#endif

// The communicator for one run placed on `ranks` (world ranks): in process for
// one rank, else the ranks' own MPI communicator.
struct RunComm {
  std::unique_ptr<Communicator> comm;
#if DPSTUDY_WITH_MPI
  std::unique_ptr<mpi::RunGroup> group;
#endif
  RunComm(const std::vector<int>& ranks, int workers, int tag) {
    if (ranks.size() == 1) {
      comm = std::make_unique<InProcessCommunicator>(workers);
      return;
    }
#if DPSTUDY_WITH_MPI
    group = std::make_unique<mpi::RunGroup>(ranks, tag);
    comm = std::make_unique<MpiCommunicator>(*group, workers);
#else
    (void)tag;
    throw Error("this build has no MPI");
#endif
  }
};

struct General {
  std::string data_dir, study_file, output = "results", device = "auto", reproduce;
  bool deterministic = true;
  int threads = 0;
  std::string parallel = "auto";  // Parallelism, checked when the options are read
  double expect_accuracy = -1;
  bool quiet = false, verbose = false, force = false, dry_run = false, rebuild_index = false;
  int procs_per_run = 0;
  std::string placement = "dynamic";
  double checkpoint_interval = 300;
  std::int64_t checkpoint_steps = 0;
  double claim_timeout = 600;
  std::string mode = "train";
  std::int64_t warmup_steps = 0, iterations = 0;
};

struct PlannedRun {
  RawValues values;
  RunConfig config;
  ModelFactory factory;
  KeyValues key_values;
  std::string id;
  std::int64_t cost = 0;  // sample-gradients: steps x W x b
};

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
// the schedule (see run_one), given the run's fraction done and its own ETA.
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

void print_header(const std::string& prog, const std::string& parallel) {
  const BuildInfo b = build_info();
  const BlasInfo blas = blas_info();
  std::printf("# %s, dpstudy %s (commit %.12s), LibTorch %s\n", prog.c_str(), b.version.c_str(),
              b.git_commit.c_str(), torch_version().c_str());
  std::printf("# BLAS: %s, %s; intra-op threads %d; parallel %s; deterministic algorithms %s\n", blas.kind.c_str(),
              blas.library.c_str(), at::get_num_threads(), parallel.c_str(),
              at::globalContext().deterministicAlgorithms() ? "on" : "off");
  if (blas.slow) std::printf("# WARNING: the reference BLAS is active; training runs about 15x slower\n");
}

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
  row("parameter_averagings", double(r.syncs.step.size()), "count");
  row("parameters", double(s.parameters), "count");
  if (s.steps_to_goal >= 0) row("steps_to_goal", double(s.steps_to_goal), "steps");
}

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

std::string axes_text(const RawValues& values, const std::vector<std::string>& swept) {
  std::string s;
  for (const auto& [k, v] : values) {
    if (std::find(swept.begin(), swept.end(), k) != swept.end()) s += (s.empty() ? "" : " ") + k + "=" + v;
  }
  return s.empty() ? "-" : s;
}

KeyValues provenance(int argc, char** argv, const TrainingData& data, int processes, bool deterministic,
                     const Trainer& trainer) {
  const BuildInfo b = build_info();
  std::string command;
  for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);
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
          {"deterministic", std::int64_t(deterministic)},
#if DPSTUDY_WITH_MPI
          {"mpi_cuda_aware", std::int64_t(mpi::cuda_aware())},
#endif
          {"command_line", command},
          {"dataset_checksums", checksums}};
}

// cpu, or the GPU of this process's local rank when there is one (auto) or
// when asked (cuda; an error without one).
at::Device resolve_device(const std::string& name, int local_rank) {
  if (name != "auto" && name != "cpu" && name != "cuda") {
    throw ConfigError("device", name, "is not one of: auto, cpu, cuda");
  }
  if (name == "cpu") return at::kCPU;
  if (!DPSTUDY_CUDA) {
    if (name == "cuda") {
      throw ConfigError("device", name, "is not available: this dpstudy was built with DPSTUDY_WITH_CUDA=OFF (use --device cpu)");
    }
    return at::kCPU;
  }
  const int gpus = at::hasCUDA() ? at::detail::getCUDAHooks().getNumGPUs() : 0;
  if (gpus == 0) {
    if (name == "cuda") {
      throw ConfigError("device", name,
                        "is not available: this LibTorch has no CUDA support or no GPU is visible (use --device cpu)");
    }
    return at::kCPU;
  }
  return at::Device(at::kCUDA, at::DeviceIndex(local_rank % gpus));
}

// Reports an error and ends: alone, with `code`; in an MPI job of several
// processes, by aborting the whole job, so that no rank waits for this one.
int fail(const Session& session, const std::string& prog, const std::string& run, const std::string& what, int code,
         bool usage) {
  std::string message = prog + ": error: ";
  if (session.size() > 1) message += "rank " + std::to_string(session.rank()) + " on " + session.host() + ", run " + run + ": ";
  message += what;
  if (usage) message += "\n(see " + prog + " --help)";
  ClaimQueue::release_held();  // the run is free for another job at once
  if (session.size() > 1) session.abort(message, code);
  std::fprintf(stderr, "%s\n", message.c_str());
  return code;
}

}  // namespace

// The processes a run takes (--procs_per_run, or the default), checked against
// the job and the run's worker groups.
// --reproduce: a run file's stored config as the values of a one-run study.
// `keys` are this workload's run and model options; a stored key that is none
// of them (a file of another dpstudy version) cannot be reproduced.
struct StoredRun {
  RawValues values;
  std::string run_id, study_text;
  std::int64_t trial = -1;          // a search trial's id, part of its run id
  std::vector<std::string> absent;  // options the file has no value for (newer than it)
  std::int64_t threads = 0;         // intra-op threads per process it ran with (provenance)
  std::string parallel;             // workers or operations; empty in files older than the option
};

StoredRun read_stored_run(const std::string& path, const std::string& workload, const std::vector<std::string>& keys) {
  std::string detail;
  const RunFileState state = inspect_run_file(path, &detail, /*any_name=*/true);
  if (state == RunFileState::missing) throw UsageError("--reproduce: " + path + ": no such run file");
  if (state != RunFileState::complete) {
    throw UsageError("--reproduce: " + path + " is not a complete run file (" + detail + ")");
  }
  const h5::File f = h5::File::open_read(path);
  const h5::Group root = f.root();
  const std::string theirs = root.get_string("workload");
  if (theirs != workload) {
    throw UsageError("--reproduce: " + path + " is a run of the " + theirs + " workload; reproduce it with dpstudy-" +
                     theirs);
  }
  StoredRun out;
  out.run_id = root.get_string("run_id");
  const h5::Group config = root.open_group("config");
  for (const std::string& k : config.attr_names()) {
    if (k == "study_text") {
      out.study_text = config.get_string(k);
    } else if (k == "trial") {
      out.trial = config.get_int(k);
    } else if (std::find(keys.begin(), keys.end(), k) == keys.end()) {
      throw UsageError("--reproduce: " + path + ": its config key '" + k +
                       "' is no option of this dpstudy (the file comes from another version), so the run cannot be "
                       "reproduced here");
    } else if (config.attr_kind(k) == 's') {
      // An empty list (no lr_milestones) is every workload's default; a study cannot spell it.
      if (!config.get_string(k).empty()) out.values.emplace_back(k, config.get_string(k));
    } else if (config.attr_kind(k) == 'i') {
      const std::int64_t v = config.get_int(k);
      const bool period = k == "sync_period" || k == "group_sync_period";
      out.values.emplace_back(k, period && v == kNever ? "never"
                                 : k == "seed"         ? std::to_string(std::uint64_t(v))
                                                       : std::to_string(v));
    } else {
      out.values.emplace_back(k, to_text(ConfigValue(config.get_double(k))));
    }
  }
  for (const std::string& k : keys) {
    if (!config.has_attr(k)) out.absent.push_back(k);
  }
  const h5::Group prov = root.open_group("provenance");
  if (prov.has_attr("threads") && prov.attr_kind("threads") == 'i') out.threads = prov.get_int("threads");
  if (prov.has_attr("parallel") && prov.attr_kind("parallel") == 's') out.parallel = prov.get_string("parallel");
  return out;
}

// A run file's provenance item as text ("-" when it has none).
std::string provenance_item(const std::string& path, const std::string& key) {
  const h5::File f = h5::File::open_read(path);
  const h5::Group prov = f.root().open_group("provenance");
  if (!prov.has_attr(key)) return "-";
  switch (prov.attr_kind(key)) {
    case 's': return prov.get_string(key);
    case 'i': return std::to_string(prov.get_int(key));
    default: return to_text(ConfigValue(prov.get_double(key)));
  }
}

// The verdict of --reproduce, printed by the study's lead process: 0 when every
// metric is the same bit for bit, 4 when any differs.
int report_reproduction(const std::string& reference, const StoredRun& stored, const std::string& id,
                        const std::string& runs_dir) {
  const std::string mine = runs_dir + "/" + id + ".h5";
  if (id != stored.run_id) {
    std::printf("# note: this dpstudy gives the stored config the run id %s, the file says %s (ids were computed "
                "differently by the version that wrote it); the comparison below still holds\n",
                id.c_str(), stored.run_id.c_str());
  }
  for (const std::string& k : stored.absent) {
    std::printf("# note: the run file has no value for %s (an option newer than the file): the default was used\n",
                k.c_str());
  }
  // Where each ran: what explains a difference, if there is one.
  std::printf("# provenance: reference -> reproduced\n");
  for (const char* k : {"dpstudy_version", "git_commit", "libtorch", "blas", "mpi_library", "hostname", "processes",
                        "threads", "parallel", "device", "deterministic"}) {
    const std::string a = provenance_item(reference, k), b = provenance_item(mine, k);
    std::printf("  %-16s  %s\n", k, (a == b ? "same: " + a : a + " -> " + b).c_str());
  }
  RunComparison c = compare_run_files(reference, mine);
  if (!c.not_in_reference.empty()) {
    std::string items;
    for (const std::string& n : c.not_in_reference) items += (items.empty() ? "" : ", ") + n;
    std::printf("# not compared, recorded only by the newer dpstudy: %s\n", items.c_str());
  }
  for (const std::string& d : c.config_differences) {
    const bool newer = std::any_of(stored.absent.begin(), stored.absent.end(),
                                   [&](const std::string& k) { return d.rfind("config@" + k + ":", 0) == 0; });
    if (!newer) c.differences.push_back(d);  // the run was not trained as stored: not a reproduction
  }
  if (c.differences.empty()) {
    std::printf("# reproduce: identical: all %zu metric datasets and attributes of run %s agree bit for bit (%s)\n",
                c.compared, stored.run_id.c_str(), mine.c_str());
    return 0;
  }
  std::printf("# reproduce: DIFFERENT: %zu of %zu metric datasets and attributes differ (%s against %s):\n",
              c.differences.size(), c.compared, mine.c_str(), reference.c_str());
  for (std::size_t i = 0; i < c.differences.size() && i < 20; ++i) std::printf("#   %s\n", c.differences[i].c_str());
  if (c.differences.size() > 20) std::printf("#   ... and %zu more\n", c.differences.size() - 20);
  return 4;
}

int procs_for_run(const RunConfig& c, int requested, int world) {
  const int w = c.workers;
  const int p = requested > 0 ? requested : default_procs_per_run(w, world);
  if (p > world || w % p != 0) {
    throw ConfigError("procs_per_run", std::to_string(p),
                      "must divide workers (" + std::to_string(w) + ") and be at most the " + std::to_string(world) +
                          " processes of the job");
  }
  const int per_process = w / p, group = c.group_size;
  if (group > 1 && per_process % group != 0 && group % per_process != 0) {
    throw ConfigError("group_size", std::to_string(group),
                      "must divide, or be a multiple of, the workers per process (" + std::to_string(w) + " / " +
                          std::to_string(p) + " processes = " + std::to_string(per_process) + ")");
  }
  return p;
}

// --mode throughput: one Google Benchmark benchmark per distinct sweep point
// (axes that do not change the work of a step, such as seeds and learning
// rates, are left out of the points). Each point's run occupies processes
// 0..P-1 of the job; the figures go to <study>/throughput.h5.
int throughput_mode(const std::vector<PlannedRun>& plan, const std::map<std::string, TrainingData>& data,
                    const std::vector<std::string>& swept, const General& g, const Session& session,
                    const std::string& workload, const std::string& prog, const std::string& study,
                    const std::string& study_dir, const at::Device& device, const std::vector<std::string>& flags) {
  static const std::set<std::string> neutral = {"seed", "data_seed", "trial", "lr", "batch_lr_ratio", "momentum",
                                                "lr_end_factor", "weight_decay", "lr_decay_steps"};
  struct State {
    std::unique_ptr<RunComm> comm;
    std::unique_ptr<Trainer> trainer;
  };
  std::vector<ThroughputPoint> points;
  std::set<std::string> names;
  const Execution execution{parse_parallelism(g.parallel), g.threads};
  for (const PlannedRun& p : plan) {
    const RunConfig& c = p.config;
    const int procs = procs_for_run(c, g.procs_per_run, session.size());
    const std::int64_t sync = c.sync_period;
    std::string point = workload + "/workers:" + std::to_string(c.workers) + "/batch:" + std::to_string(c.batch_size) +
                        "/sync:" + (sync == kNever ? std::string("never") : std::to_string(sync));
    KeyValues params = {{"workers", std::int64_t(c.workers)},
                        {"batch_size", c.batch_size},
                        {"sync_period", sync},
                        {"procs", std::int64_t(procs)},
                        {"device", device.str()}};
    for (const std::string& k : swept) {
      if (neutral.count(k) || k == "workers" || k == "batch_size" || k == "sync_period") continue;
      const auto v = std::find_if(p.values.begin(), p.values.end(), [&](const auto& kv) { return kv.first == k; });
      const auto typed =
          std::find_if(p.key_values.begin(), p.key_values.end(), [&](const auto& kv) { return kv.first == k; });
      if (v == p.values.end()) continue;
      point += "/" + k + ":" + v->second;
      if (typed != p.key_values.end()) params.push_back(*typed);
    }
    point += "/procs:" + std::to_string(procs) + "/device:" + device.str();
    if (!names.insert(point).second) continue;
    auto state = std::make_shared<State>();
    std::vector<int> ranks(static_cast<std::size_t>(procs));
    for (int r = 0; r < procs; ++r) ranks[std::size_t(r)] = r;
    const TrainingData* d = &data.at(c.dataset);
    const int tag = int(points.size());
    ThroughputPoint tp;
    tp.name = point;
    tp.params = std::move(params);
    tp.steps_per_period = sync >= 1 ? sync : 1;
    tp.workers = c.workers;
    tp.member = session.rank() < procs;
    tp.params.emplace_back("parallel",
                           to_string(resolve_parallelism(execution.parallel, c.workers / procs, g.threads, device)));
    tp.setup = [state, c, factory = p.factory, d, ranks, tag, execution] {
      state->comm = std::make_unique<RunComm>(ranks, c.workers, tag);
      state->trainer = std::make_unique<Trainer>(c, factory, *d, *state->comm->comm, execution);
    };
    tp.run = [state, c](std::int64_t steps) {
      Trainer& t = *state->trainer;
      const double comm0 = t.comm_seconds();
      const std::int64_t bytes0 = t.comm_bytes();
      const auto t0 = Clock::now();
      for (std::int64_t i = 0; i < steps; ++i) t.step();
      PeriodSample s;
      s.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
      s.comm_seconds = t.comm_seconds() - comm0;
      s.bytes = t.comm_bytes() - bytes0;
      s.samples = steps * c.workers * c.batch_size;
      return s;
    };
    tp.teardown = [state] {
      state->trainer.reset();
      state->comm.reset();
    };
    points.push_back(std::move(tp));
  }
  ThroughputOptions o;
  o.warmup_steps = g.warmup_steps;
  o.iterations = g.iterations > 0 ? g.iterations : session.size() > 1 ? 10 : 0;
  o.study = study;
  o.workload = workload;
  o.quiet = g.quiet;
  const bool lead = session.rank() == 0;
  if (!study_dir.empty() && lead) {
    std::error_code ec;
    fs::create_directories(study_dir, ec);
    if (ec) throw UsageError(study_dir + ": cannot create the results folder (" + ec.message() + ")");
    o.hdf5_path = (fs::path(study_dir) / "throughput.h5").string();
  }
  if (lead && !g.quiet) {
    print_header(prog, g.parallel);
    std::printf("# throughput: %zu benchmark(s) on %d process(es); timed: one sync period per iteration, the "
                "slowest process's time (docs/performance.md)\n", points.size(), session.size());
    std::fflush(stdout);
  }
  return run_throughput(std::move(points), o, lead, [&session](double v) { return session.max(v); }, flags);
}

int workload_main(int argc, char** argv, const Workload& workload) {
  const std::string prog = "dpstudy-" + workload.name;
  const Session session;  // MPI, when launched by mpirun or srun
  std::string current_run = "-";
  try {
    General g;
    RunOptions run_help(workload.defaults);
    po::options_description model_help("Model");
    if (workload.model_options) workload.model_options(model_help);

    po::options_description general("General");
    general.add_options()("help,h", "show this help")(
        "version", "print the version and the features of this build (MPI, CUDA), then exit")(
        "data_dir", po::value(&g.data_dir), "look here first for datasets (see docs/datasets.md)")(
        "threads", po::value(&g.threads)->default_value(0),
        "threads per process (0: the cores it may run on; under mpirun the node's cores shared among its "
        "processes, at most the cores a process is bound to). The bits depend on it only where a process has "
        "fewer workers than threads (--parallel, docs/engine.md)")(
        "parallel", po::value(&g.parallel)->default_value("auto"),
        "how a process uses its threads: workers (its workers side by side, one thread each: the bits do not "
        "depend on --threads), operations (one worker at a time, each operation on all threads), auto (workers "
        "when the process has at least as many workers as threads). CPU only (docs/engine.md)")(
        "device", po::value(&g.device)->default_value("auto"),
        "auto (a GPU when there is one, each MPI process the GPU of its local rank), cpu or cuda")(
        "deterministic", po::value(&g.deterministic)->default_value(true),
        "deterministic algorithms (ATen, cuDNN); recorded in provenance")(
        "quiet", po::bool_switch(&g.quiet), "print only results and errors")(
        "verbose", po::bool_switch(&g.verbose), "also print each run's config and data assignment")(
        "expect_accuracy", po::value(&g.expect_accuracy),
        "correctness check: exit 3 unless every run's final test accuracy is at least this fraction");
    po::options_description study("Study (docs/studies.md)");
    study.add_options()("study", po::value(&g.study_file), "study file (INI); the command line wins over it")(
        "reproduce", po::value(&g.reproduce),
        "RUN_FILE.h5: train that run again from the config stored in it, under results/reproduce-<run id>, and "
        "compare every metric bit for bit (exit 4 when any differs)")(
        "name", po::value<std::string>(), "study name (default: the study file's name, or the workload's)")(
        "seeds", po::value<std::string>(), "a count n (seeds 1..n) or a list of seeds")(
        "exclude", po::value<std::string>(), "combinations to drop, e.g. \"sync_period=1 & overlap>0; workers=1\"")(
        "output", po::value(&g.output), "results root: <output>/<study>/ (default: results)")(
        "force", po::bool_switch(&g.force), "rerun runs that are already complete")(
        "dry_run", po::bool_switch(&g.dry_run), "print the run list and the estimated cost, run nothing")(
        "rebuild_index", po::bool_switch(&g.rebuild_index), "rebuild <output>/<study>/index.h5 from the run files")(
        "checkpoint_interval", po::value(&g.checkpoint_interval)->default_value(300),
        "save a running run's full state every this many seconds (0: never)")(
        "checkpoint_steps", po::value(&g.checkpoint_steps)->default_value(0),
        "also every this many steps (0: not by steps)")(
        "procs_per_run", po::value(&g.procs_per_run)->default_value(0),
        "under mpirun: processes per run (0: the largest power of two <= min(workers, processes) dividing workers)")(
        "claim_timeout", po::value(&g.claim_timeout)->default_value(600),
        "several jobs on one study: seconds after which a claim on a run that its job stopped refreshing is "
        "stale and the run is taken over (docs/mpi.md)")(
        "placement", po::value(&g.placement)->default_value("dynamic"),
        "under mpirun: dynamic (groups of processes take the next run as they become free) or static (placed "
        "in advance from estimated costs); runs of several sizes: groups of the largest split as its runs "
        "run out (docs/mpi.md)");
    po::options_description speed("Throughput mode (docs/performance.md); Google Benchmark's --benchmark_* flags apply");
    speed.add_options()("mode", po::value(&g.mode)->default_value("train"),
                        "train: run the study; throughput: time training steps per sweep point with Google Benchmark")(
        "warmup_steps", po::value(&g.warmup_steps)->default_value(0),
        "throughput: untimed steps before timing (0: one sync period)")(
        "iterations", po::value(&g.iterations)->default_value(0),
        "throughput: timed periods per benchmark (0: Google Benchmark decides; 10 under MPI)");

    // Every run and model key, as text: a study gives lists, resolved per run below.
    std::vector<std::string> keys;
    for (const po::options_description* d : std::vector<const po::options_description*>{&run_help.description(), &model_help}) {
      for (const auto& opt : d->options()) keys.push_back(opt->long_name());
    }
    std::vector<std::string> list_keys = workload.list_keys;
    list_keys.push_back("lr_milestones");
    po::options_description raw;
    for (const auto& k : keys) raw.add_options()(k.c_str(), po::value<std::string>());
    po::options_description search("Metaparameter search (docs/studies.md)");
    search.add_options()("search", po::value<std::string>(), "sobol, random or grid: trials per combination")(
        "trials", po::value<std::string>(), "search: trials per combination of the other axes")(
        "search_skip", po::value<std::string>(), "sobol: leading points skipped (default 0; Boost's sequence starts at 0.5, not the origin)")(
        "search_seed", po::value<std::string>(), "random: the generator's seed (default 1)")(
        "search_lr", po::value<std::string>(), "LOW:HIGH, log scale")(
        "search_momentum", po::value<std::string>(), "LOW:HIGH, log scale in 1 - momentum")(
        "search_lr_end_factor", po::value<std::string>(), "LOW:HIGH, log scale")(
        "search_weight_decay", po::value<std::string>(), "LOW:HIGH, log scale")(
        "search_lr_decay_steps", po::value<std::string>(), "LOW:HIGH, whole steps");
    po::options_description cli;
    cli.add(general).add(study).add(search).add(speed).add(raw);
    // Google Benchmark's own flags go to it, untouched (throughput mode).
    std::vector<std::string> cli_args, benchmark_flags;
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      (a.rfind("--benchmark_", 0) == 0 ? benchmark_flags : cli_args).push_back(a);
    }
    po::variables_map vm;
    try {
      po::store(po::command_line_parser(cli_args).options(cli).run(), vm);
    } catch (const po::unknown_option& e) {
      std::vector<std::string> all = keys;
      for (const po::options_description* d : std::vector<const po::options_description*>{&general, &study, &search, &speed}) {
        for (const auto& opt : d->options()) all.push_back(opt->long_name());
      }
      std::string bad = e.get_option_name();
      while (!bad.empty() && bad[0] == '-') bad.erase(0, 1);
      throw UsageError("unrecognised option '--" + bad + "'; did you mean --" + closest_key(bad, all) + "?");
    }
    if (vm.count("version")) {
      const BuildInfo b = build_info();
      std::printf("%s dpstudy %s commit %s libtorch %s mpi %s cuda %s\n", prog.c_str(), b.version.c_str(),
                  b.git_commit.c_str(), torch_version().c_str(), b.with_mpi ? "on" : "off", b.with_cuda ? "on" : "off");
      return 0;
    }
    if (vm.count("help")) {
      po::options_description all(prog + " [--key value]...: " + workload.summary);
      all.add(general).add(study).add(search).add(speed).add(run_help.description()).add(model_help);
      std::cout << all << "\nDefinitions and formulas: docs/engine.md; studies: docs/studies.md\n";
      return 0;
    }
    po::notify(vm);
    if (g.mode != "train" && g.mode != "throughput") throw ConfigError("mode", g.mode, "is not one of: train, throughput");
    if (g.procs_per_run < 0) {
      throw ConfigError("procs_per_run", std::to_string(g.procs_per_run), "must be >= 0 (0: the default)");
    }
    if (!(g.checkpoint_interval >= 0) || !std::isfinite(g.checkpoint_interval)) {
      throw ConfigError("checkpoint_interval", to_text(g.checkpoint_interval), "must be a number of seconds >= 0 (0: never)");
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
    if (g.mode == "throughput" && g.dry_run) {
      throw UsageError("--dry_run does nothing in throughput mode: list its benchmarks with --benchmark_list_tests=true");
    }
    if (g.warmup_steps < 0) throw ConfigError("warmup_steps", std::to_string(g.warmup_steps), "must be >= 0");
    if (g.iterations < 0) throw ConfigError("iterations", std::to_string(g.iterations), "must be >= 0");
    if (!benchmark_flags.empty() && g.mode != "throughput") {
      throw UsageError("'" + benchmark_flags.front() + "' is a Google Benchmark flag: it needs --mode throughput");
    }

    // Study file first, then the command line on top.
    std::vector<std::string> study_keys = keys;
    for (const char* k : {"name", "seeds", "exclude", "workload"}) study_keys.push_back(k);
    for (const auto& k : search_keys()) study_keys.push_back(k);
    RawValues values;
    std::string study_text;
    if (!g.study_file.empty()) {
      // A study file not found as given is looked for among the shipped ones:
      // the source tree's studies/, then the installed <prefix>/share/dpstudy/studies.
      std::error_code ec;
      if (!fs::exists(g.study_file, ec) && fs::path(g.study_file).filename() == fs::path(g.study_file)) {
        for (const std::string& dir : {build_info().source_dir + "/studies", installed_share_dir() + "/studies"}) {
          if (fs::exists(fs::path(dir) / g.study_file, ec)) {
            g.study_file = (fs::path(dir) / g.study_file).string();
            break;
          }
        }
      }
      values = read_study_file(g.study_file, study_keys, &study_text, workload.name);
    }
    StoredRun stored;
    if (!g.reproduce.empty()) {
      if (!g.study_file.empty()) throw UsageError("--reproduce takes the run's config from its file: drop --study");
      for (const auto& k : study_keys) {
        if (vm.count(k)) {
          throw UsageError("--reproduce takes every run key from the run file: drop --" + k +
                           " (a changed run is not a reproduction; to vary it, run a study)");
        }
      }
      stored = read_stored_run(g.reproduce, workload.name, keys);
      values = stored.values;
      values.emplace_back("name", "reproduce-" + stored.run_id);
      study_text = stored.study_text;
      g.force = true;  // train it again even if an earlier reproduction is there
    }
    for (const auto& k : study_keys) {
      if (!vm.count(k)) continue;
      const std::string v = vm[k].as<std::string>();
      auto it = std::find_if(values.begin(), values.end(), [&](const auto& kv) { return kv.first == k; });
      if (it != values.end()) {
        it->second = v;
      } else {
        values.emplace_back(k, v);
      }
    }
    auto take = [&](const std::string& k) {
      std::string v;
      auto it = std::find_if(values.begin(), values.end(), [&](const auto& kv) { return kv.first == k; });
      if (it != values.end()) {
        v = it->second;
        values.erase(it);
      }
      return v;
    };
    take("workload");  // checked by read_study_file: a study says which workloads it was written for
    std::string name = take("name");
    const std::string seeds = take("seeds");
    const std::string exclude = take("exclude");
    RawValues search_values;
    for (const auto& k : search_keys()) {
      const std::string v = take(k);
      if (!v.empty()) search_values.emplace_back(k, v);
    }
    const SearchSpec search_spec = parse_search(search_values);
    const std::vector<RawValues> trials = search_spec.method.empty() ? std::vector<RawValues>{RawValues{}}
                                                                      : search_trials(search_spec);

    // Axes in declaration order, seeds last.
    std::vector<std::pair<std::string, std::vector<std::string>>> axes;
    std::vector<std::string> swept;
    for (const auto& k : keys) {
      auto it = std::find_if(values.begin(), values.end(), [&](const auto& kv) { return kv.first == k; });
      if (it == values.end()) continue;
      if (k == "seed" && !seeds.empty()) throw ConfigError("seeds", seeds, "cannot be combined with --seed");
      const bool is_list = std::find(list_keys.begin(), list_keys.end(), k) != list_keys.end();
      axes.emplace_back(k, split_axis(k, it->second, is_list));
    }
    if (!seeds.empty()) axes.emplace_back("seed", expand_seeds(seeds));
    for (const auto& [k, v] : axes) {
      if (v.size() > 1) swept.push_back(k);
      for (const auto& d : search_spec.dims) {
        if (d.key == k) throw ConfigError("search_" + k, "", "conflicts with the " + k + " key: give one of the two");
      }
    }
    if (!search_spec.method.empty()) {
      for (const auto& d : search_spec.dims) swept.push_back(d.key);
      swept.push_back("trial");
    }
    const std::vector<ExcludeRule> rules = parse_exclude(exclude, keys);
    const bool study_mode = !g.study_file.empty() || vm.count("output") || !swept.empty() || g.dry_run ||
                            g.rebuild_index;
    if (name.empty()) name = g.study_file.empty() ? workload.name : fs::path(g.study_file).stem().string();
    const std::string study_dir = (fs::path(g.output) / name).string();
    if (g.rebuild_index) {
      std::vector<std::string> skipped;
      const std::size_t n = rebuild_index(study_dir, name, &skipped);
      for (const auto& s : skipped) std::printf("# skipped corrupt run file: %s\n", s.c_str());
      std::printf("# rebuilt %s/index.h5: %zu runs\n", study_dir.c_str(), n);
      return 0;
    }

    // Resolve every combination now: bad values are reported before anything runs.
    std::vector<PlannedRun> plan;
    std::set<std::string> planned_ids;  // combinations that resolve to one config run once
    std::vector<std::string> invalid;
    std::size_t excluded = 0;
    for (const RawValues& base : cartesian_product(axes)) {
      if (is_excluded(rules, base)) {
        ++excluded;
        continue;
      }
      for (std::size_t trial = 0; trial < trials.size(); ++trial) {
      RawValues combo = base;
      combo.insert(combo.end(), trials[trial].begin(), trials[trial].end());
      try {
        RunOptions run_options(workload.defaults);
        po::options_description md("Model");
        if (workload.model_options) workload.model_options(md);
        po::options_description d;
        d.add(run_options.description()).add(md);
        std::vector<std::string> args;
        for (const auto& [k, v] : combo) {
          args.push_back("--" + k);
          args.push_back(v);
        }
        // A ratio given without a rate replaces the workload's default rate.
        const auto given = [&](const char* k) {
          return std::any_of(combo.begin(), combo.end(), [&](const auto& kv) { return kv.first == k; });
        };
        if (given("batch_lr_ratio") && !given("lr")) args.insert(args.end(), {"--lr", "0"});
        po::variables_map rv;
        po::store(po::command_line_parser(args).options(d).run(), rv);
        po::notify(rv);
        PlannedRun p;
        p.values = combo;
        p.config = run_options.resolve();
        p.factory = workload.make_model(dataset_spec(p.config.dataset));
        p.key_values = p.config.key_values();
        if (workload.model_values) {
          for (auto& kv : workload.model_values()) p.key_values.push_back(kv);
        }
        if (!search_spec.method.empty()) {
          p.key_values.emplace_back("trial", std::int64_t(trial));  // a stable trial id, part of the run id
          p.values.emplace_back("trial", std::to_string(trial));
        } else if (stored.trial >= 0) {
          p.key_values.emplace_back("trial", stored.trial);
        }
        p.id = run_id(workload.name, p.key_values);
        if (planned_ids.insert(p.id).second) plan.push_back(std::move(p));
      } catch (const std::exception& e) {
        if (!study_mode) throw;
        invalid.push_back("  " + axes_text(combo, swept) + ": " + e.what());
      }
      }
    }
    if (!invalid.empty()) {
      std::string msg = std::to_string(invalid.size()) + " combination(s) are invalid (drop them with --exclude):";
      for (std::size_t i = 0; i < invalid.size() && i < 10; ++i) msg += "\n" + invalid[i];
      if (invalid.size() > 10) msg += "\n  ... and " + std::to_string(invalid.size() - 10) + " more";
      throw UsageError(msg);
    }
    if (plan.empty()) throw UsageError("the study has no runs (every combination is excluded)");
    const at::Device device = resolve_device(g.device, session.local_rank());
    if (g.deterministic) {
      // cuBLAS needs this set before its first use to be deterministic.
      if (device.is_cuda()) setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", 0);
      at::globalContext().setDeterministicAlgorithms(true, false);
      at::globalContext().setDeterministicCuDNN(true);
      at::globalContext().setBenchmarkCuDNN(false);
    }
    if (g.threads < 0) throw ConfigError("threads", std::to_string(g.threads), "must be >= 0");
    const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
    // A reproduction computes as its reference did. Workers that stepped side by
    // side ran every operation on one thread: so does the reproduction, whatever
    // its threads. Operations spread over T threads (or a file older than
    // --parallel) need T again: OpenBLAS sums a long inner dimension in another
    // order with another thread count (docs/engine.md).
    Parallelism parallel = parse_parallelism(g.parallel);
    const bool stored_side_by_side = stored.parallel == "workers";
    if (!g.reproduce.empty() && vm["parallel"].defaulted()) {
      parallel = stored_side_by_side ? Parallelism::workers : Parallelism::operations;
      g.parallel = to_string(parallel);
    }
    if (!g.reproduce.empty() && !stored_side_by_side && vm["threads"].defaulted() && stored.threads > 0) {
      if (stored.threads > 4 * cores) {
        throw UsageError("--reproduce: the run used " + std::to_string(stored.threads) +
                         " threads per process, more than 4 per core of the " + std::to_string(cores) +
                         " cores here; give --threads N, knowing that another thread count may change the bits");
      }
      g.threads = int(stored.threads);
    }
    if (g.threads > 4 * cores) {  // OpenMP would start them all, and crawl
      throw ConfigError("threads", std::to_string(g.threads),
                        "is more than 4 threads per core of the " + std::to_string(cores) + " cores here");
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
    const Execution execution{parallel, g.threads};

    // Data, once per dataset; then every run's cost, and W b <= N, before anything runs.
    // A dry run plans without the files if they are not here (a login node).
    std::map<std::string, TrainingData> data;
    std::map<std::string, std::int64_t> train_size;
    std::vector<std::string> data_notes;
    LoadOptions load;
    load.data_dir = g.data_dir;
    for (auto& p : plan) {
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
          data[ds] = prepare_data(load_dataset(ds, Split::train, load), load_dataset(ds, Split::test, load), device);
          train_size[ds] = data[ds].train_y.size(0);
        } else {
          train_size[ds] = spec.official_train;
          data_notes.push_back("# " + ds + " was not found; costs assume its official " +
                               std::to_string(spec.official_train) + " training images. A run needs the files: " +
                               spec.obtain);
        }
      }
      const std::int64_t total = train_size[ds];
      const std::int64_t n = total - std::llround(p.config.validation_fraction * double(total));
      const std::int64_t global = std::int64_t(p.config.workers) * p.config.batch_size;
      if (n / global == 0) {
        throw ConfigError("batch_size", std::to_string(p.config.batch_size),
                          "is too large for " + axes_text(p.values, swept) + ": workers x batch_size = " +
                              std::to_string(global) + " exceeds the " + std::to_string(n) + " training samples");
      }
      p.cost = (n / global) * p.config.epochs * global;
      // A label-skewed assignment, or fewer medium blocks than owners, may leave
      // an owner without samples: found now, not when the run's turn comes
      // (the data decide, so only if they are here).
      if ((p.config.dirichlet_alpha > 0 || p.config.granularity == Granularity::medium) && data.count(ds)) {
        try {
          (void)split_data(p.config, data[ds].train_y);
        } catch (const ConfigError& e) {
          throw UsageError("the run " + axes_text(p.values, swept) + ": " + e.what());
        }
      }
    }

    if (g.mode == "throughput") {
      return throughput_mode(plan, data, swept, g, session, workload.name, prog, name, study_mode ? study_dir : "",
                             device, benchmark_flags);
    }

    const int verbosity = g.quiet ? 0 : g.verbose ? 2 : 1;
    const bool lead = session.rank() == 0;
    std::vector<int> world_ranks(static_cast<std::size_t>(session.size()));
    for (int r = 0; r < session.size(); ++r) world_ranks[std::size_t(r)] = r;
    if (!study_mode) {  // one run, on the console only; under mpirun, on all processes
      PlannedRun& p = plan.front();
      current_run = p.id;
      if (!g.quiet && lead) {
        print_header(prog, g.parallel);
        std::printf("# config:");
        for (const auto& [k, v] : p.key_values) std::printf(" %s=%s", k.c_str(), to_text(v).c_str());
        std::printf("\n");
      }
      RunComm rc(world_ranks, p.config.workers, 0);
      ConsoleProgress console;
      const RunResult result =
          train_run(p.config, p.factory, data[p.config.dataset], *rc.comm, g.quiet || !lead ? nullptr : &console,
                    execution);
      if (!lead) return 0;
      print_result(result);
      if (vm.count("expect_accuracy")) {
        const double acc = result.summary.final_test_accuracy;
        const bool ok = result.summary.status == RunStatus::completed && acc >= g.expect_accuracy;
        std::printf("# check: final test accuracy %.4f %s %.4f: %s\n", acc, ok ? ">=" : "<", g.expect_accuracy,
                    ok ? "ok" : "FAILED");
        return ok ? 0 : 3;
      }
      return 0;
    }

    // A study: results under <output>/<study>/. Rank 0 looks at what is there.
    const fs::path runs_dir = fs::path(study_dir) / "runs";
    std::vector<std::int64_t> state(plan.size(), std::int64_t(RunFileState::missing));
    std::vector<std::string> why(plan.size());
    std::error_code ec;
    double measured_rate = 0;  // mean samples/s of the complete runs, for the estimate
    std::size_t complete = 0;
    if (lead) {
      if (fs::is_directory(runs_dir, ec)) check_results_schema(study_dir);
      for (std::size_t i = 0; i < plan.size(); ++i) {
        const std::string file = (runs_dir / (plan[i].id + ".h5")).string();
        state[i] = std::int64_t(inspect_run_file(file, &why[i]));
        if (state[i] == std::int64_t(RunFileState::complete)) {
          const h5::File f = h5::File::open_read(file);
          measured_rate += f.root().open_group("summary").get_double("samples_per_s");
          ++complete;
        }
      }
    }
    // What a run file was when the plan was made (0: none), to notice one that
    // another job writes or rewrites meanwhile. Only rank 0 looks, once per file
    // that exists: no stat per run per process on a parallel file system.
    auto stamp = [&](const std::string& id) -> std::int64_t {
      struct stat st {};
      if (::stat((runs_dir / (id + ".h5")).c_str(), &st) != 0) return 0;
      const std::string text = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" +
                               std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) + ":" +
                               std::to_string(st.st_size);
      return std::int64_t(std::hash<std::string>()(text) | 1);  // never 0
    };
    std::vector<std::int64_t> planned_stamp(plan.size(), 0);
    if (lead) {
      for (std::size_t i = 0; i < plan.size(); ++i) {
        if (state[i] != std::int64_t(RunFileState::missing)) planned_stamp[i] = stamp(plan[i].id);
      }
    }
    session.broadcast(state);
    session.broadcast(planned_stamp);
    auto to_run = [&](std::size_t i) { return g.force || state[i] != std::int64_t(RunFileState::complete); };

    // Processes per run, and the schedule of the runs still to do.
    std::vector<std::size_t> todo;
    std::vector<double> costs;
    std::vector<int> procs;
    for (std::size_t i = 0; i < plan.size(); ++i) {
      const int p = procs_for_run(plan[i].config, g.procs_per_run, session.size());
      if (!to_run(i)) continue;
      todo.push_back(i);
      costs.push_back(double(plan[i].cost));
      procs.push_back(p);
    }
    // Dynamic: groups of P processes take the runs of their P in the schedule's
    // order; with several P, a group with none left splits (nested_blocks). The
    // sizes must nest; otherwise the static schedule uses every process
    // (overlapping sets of ranks over time).
    const bool uniform = std::all_of(procs.begin(), procs.end(), [&](int q) { return q == procs.front(); });
    const bool dynamic = g.placement == "dynamic" && (procs.empty() || sizes_nest(procs, session.size()));
    std::vector<Placement> schedule =
        dynamic ? schedule_nested(costs, procs, session.size()) : schedule_runs(costs, procs, session.size());
    for (auto& pl : schedule) pl.run = todo[pl.run];
    double makespan = 0;
    for (const auto& pl : schedule) makespan = std::max(makespan, pl.end);

    const auto checkpoints = checkpoints_by_run(runs_dir);  // as the study starts

    if (g.dry_run) {
      if (!lead) return 0;
      std::string swept_text;
      for (const auto& k : swept) swept_text += (swept_text.empty() ? "" : ", ") + k;
      std::printf("# study %s: %zu runs (%zu excluded, %zu already complete), swept: %s\n", name.c_str(),
                  plan.size(), excluded, complete, swept.empty() ? "-" : swept_text.c_str());
      std::printf("# results: %s; %d process(es)\n", study_dir.c_str(), session.size());
      std::size_t side_by_side = 0;
      for (const auto& p : plan) {
        const int run_procs = procs_for_run(p.config, g.procs_per_run, session.size());
        side_by_side += resolve_parallelism(parallel, p.config.workers / run_procs, g.threads, device) ==
                        Parallelism::workers;
      }
      std::printf("# threads: %d per process, --parallel %s: %zu run(s) with their workers side by side (one "
                  "thread each: the bits of one thread), %zu spreading each operation over the threads "
                  "(docs/engine.md#threads)\n",
                  g.threads, g.parallel.c_str(), side_by_side, plan.size() - side_by_side);
      for (const auto& note : data_notes) std::printf("%s\n", note.c_str());
      // What another job on this study is doing shows in the folder: a claim is a
      // run being trained now, a checkpoint a run that will resume.
      std::set<std::string> claimed;
      for (const auto& entry : fs::directory_iterator(runs_dir, ec)) {
        const std::string f = entry.path().filename().string();
        if (f.size() > 6 && f.compare(f.size() - 6, 6, ".claim") == 0 &&
            !ClaimQueue::is_stale(entry.path().string(), g.claim_timeout)) {
          claimed.insert(f.substr(0, f.size() - 6));
        }
      }
      auto state_of = [&](std::size_t i) -> const char* {
        if (state[i] == std::int64_t(RunFileState::complete)) return g.force ? "rerun" : "complete";
        if (claimed.count(plan[i].id)) return "running";
        if (checkpoints.count(plan[i].id)) return "resumable";
        return state[i] == std::int64_t(RunFileState::corrupt) ? "corrupt" : "to run";
      };
      std::printf("# %4s  %-16s  %-9s  %14s  %s\n", "run", "run id", "state", "cost (samples)", "axes");
      std::int64_t todo_cost = 0;
      for (std::size_t i = 0; i < plan.size(); ++i) {
        std::printf("  %4zu  %-16s  %-9s  %14lld  %s\n", i + 1, plan[i].id.c_str(), state_of(i),
                    (long long)plan[i].cost, axes_text(plan[i].values, swept).c_str());
        if (to_run(i)) todo_cost += plan[i].cost;
      }
      if (dynamic && uniform) {
        const int group_procs = procs.empty() ? 1 : procs.front();
        std::printf("# schedule: %zu runs on %d process(es) in %d group(s) of %d, taken in this order as groups "
                    "become free; ranks, start and end as the estimated costs predict\n",
                    schedule.size(), session.size(), session.size() / group_procs, group_procs);
      } else if (dynamic) {
        std::set<int, std::greater<int>> sizes(procs.begin(), procs.end());
        std::string sizes_text;
        for (int q : sizes) sizes_text += (sizes_text.empty() ? "" : ", then ") + std::to_string(q);
        std::printf("# schedule: %zu runs on %d process(es) in groups of %s: a group takes the runs of its size in "
                    "this order as it becomes free, and splits into smaller groups when none is left; ranks, start "
                    "and end as the estimated costs predict\n",
                    schedule.size(), session.size(), sizes_text.c_str());
      } else {
        std::printf("# schedule: %zu runs on %d process(es), placed in advance, largest estimated cost first%s\n",
                    schedule.size(), session.size(),
                    g.placement == "static" ? ""
                    : !uniform ? " (its runs' processes per run do not nest: each must divide the next larger, and "
                                 "the smallest the processes)"
                               : " (the processes per run do not divide the processes)");
      }
      std::printf("# %4s  %-16s  %-12s  %16s  %16s\n", "run", "run id", "ranks", "start (samples)", "end (samples)");
      for (const auto& pl : schedule) {
        std::string ranks;
        for (int r : pl.ranks) ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
        std::printf("  %4zu  %-16s  %-12s  %16.0f  %16.0f\n", pl.run + 1, plan[pl.run].id.c_str(), ranks.c_str(),
                    pl.start, pl.end);
      }
      std::printf("# estimated cost: %lld sample-gradients to compute, %.0f per process on the longest one",
                  (long long)todo_cost, makespan);
      if (complete > 0) {
        measured_rate /= double(complete);
        std::printf(", %.1f min at the %.0f samples/s its %zu complete runs measured\n",
                    makespan / measured_rate / 60.0, measured_rate, complete);
      } else {
        std::printf(" (no run of this study has finished yet, so no measured rate: run a few, then --dry_run again)\n");
      }
      if (std::any_of(plan.begin(), plan.end(), [](const PlannedRun& q) { return q.config.stop_at_goal; })) {
        std::printf("# runs with stop_at_goal end at their goal: the costs are upper bounds\n");
      }
      return 0;
    }
    if (lead) {
      fs::create_directories(runs_dir, ec);
      if (ec || access(runs_dir.c_str(), W_OK) != 0) {
        throw UsageError(runs_dir.string() + ": cannot create or write the results folder" +
                         (ec ? " (" + ec.message() + ")" : ""));
      }
      // Temporary files of writes that a kill interrupted (never complete, never
      // read) and claims of a killed job (their runs are to do again); another
      // job's that is still running stay (several jobs on one study, docs/mpi.md).
      for (const fs::path& dir : {runs_dir, fs::path(study_dir)}) {
        for (const auto& entry : fs::directory_iterator(dir, ec)) {
          if (entry.path().extension() == ".tmp" && ClaimQueue::is_stale(entry.path().string(), g.claim_timeout)) {
            fs::remove(entry.path(), ec);
          }
        }
      }
      ClaimQueue::remove_stale_claims(runs_dir.string(), g.claim_timeout);
    }
    session.barrier();
    Output out(verbosity);
    // Results I/O against training time, as measured in this invocation (lead
    // process): run files, index rebuilds and checkpoints (docs/performance.md).
    double training_s = 0, results_io_s = 0;
    out.open_log((fs::path(study_dir) / "log.txt").string());
    if (lead) {
      out.line("# study " + name + ": " + std::to_string(plan.size()) + " runs, " + std::to_string(complete) +
               " already complete; results in " + study_dir + "; " + std::to_string(session.size()) + " process(es)");
      if (verbosity >= 1) print_header(prog, g.parallel);
    }

    const auto study_start = Clock::now();
    StudyIndex index(study_dir, name);  // rewritten after each run this process leads, and at the end
    double taken_work = 0;  // sample-gradients / processes of the runs this process has finished here
    // One run on the processes pl.ranks (this one among them). `study_eta` maps
    // the run's fraction done and its ETA (s) to the study's ETA (s).
    // `claim`, if given, is asked on the run's first process whether this job
    // may train it (static placement: another job may hold it); false skips it.
    auto run_one = [&](const Placement& pl, const std::function<double(double, double)>& study_eta,
                       const std::function<void()>& heartbeat = {}, const std::function<bool()>& claim = {}) {
      const auto me = std::find(pl.ranks.begin(), pl.ranks.end(), session.rank());
      const bool leader = me == pl.ranks.begin();
      const std::size_t i = pl.run;
      PlannedRun& p = plan[i];
      current_run = p.id;
      const std::string tag = "[run " + std::to_string(i + 1) + "/" + std::to_string(plan.size()) + "] ";
      const std::string file = (runs_dir / (p.id + ".h5")).string();
      const int nprocs = int(pl.ranks.size());
      auto ckpt_of = [&](int group_rank) {
        return (runs_dir / (p.id + (nprocs == 1 ? std::string(".ckpt.h5")
                                                 : ".ckpt.r" + std::to_string(group_rank) + "of" +
                                                       std::to_string(nprocs) + ".h5"))).string();
      };
      const int my_group_rank = int(me - pl.ranks.begin());
      const std::string ckpt = ckpt_of(my_group_rank);
      const std::string axes_str = axes_text(p.values, swept);
      Output quiet_out(0);
      Output& o = leader ? out : quiet_out;
      RunComm rc(pl.ranks, p.config.workers, int(i));
      if (claim) {
        long long mine = leader && claim() ? 1 : 0;
#if DPSTUDY_WITH_MPI
        if (rc.group) rc.group->broadcast(mine);
#endif
        if (!mine) {
          o.line(tag + p.id + " " + axes_str + ": another job holds it; left to that job");
          return false;
        }
      }
      if (state[i] == std::int64_t(RunFileState::corrupt) && leader) {
        o.line(tag + p.id + ": run file is corrupt (" + why[i] + "); rerunning");
      }
      o.line(tag + p.id + " " + axes_str + ": starting" +
             (nprocs > 1 ? " on ranks " + std::to_string(pl.ranks.front()) + ".." + std::to_string(pl.ranks.back())
                         : ""));
      std::string config_line = tag + "# config:";
      for (const auto& [k, v] : p.key_values) config_line += " " + k + "=" + to_text(v);
      o.line(config_line, 2);
      const TrainingData& d = data[p.config.dataset];
      auto trainer = std::make_unique<Trainer>(p.config, p.factory, d, *rc.comm, execution);
      // Resume only if every process of the run has its checkpoint at the same
      // step: each reads the same files, so all decide alike without talking.
      bool resume = !g.force;
      std::int64_t step = -1;
      for (int q = 0; q < nprocs && resume; ++q) {
        try {
          if (!fs::exists(ckpt_of(q), ec)) {
            resume = false;
            break;
          }
          const h5::File f = h5::File::open_read(ckpt_of(q));
          const std::int64_t s = f.root().get_int("step");
          resume = step < 0 || s == step;
          step = s;
        } catch (const Error&) {
          resume = false;
        }
      }
      if (!resume && !g.force && leader && checkpoints.count(p.id)) {
        o.line(tag + "its checkpoints are not a complete set for " + std::to_string(nprocs) +
               " process(es) at one step (made with another --procs_per_run, or a kill between their writes); "
               "starting over");
      }
      if (resume) {
        try {
          trainer->restore_checkpoint(ckpt);
          o.line(tag + "resuming from its checkpoint at step " + std::to_string(trainer->current_step()));
        } catch (const Error& e) {
          // Every process reads a complete file of the same configuration, so they fail alike.
          o.line(tag + "checkpoint unusable (" + std::string(e.what()) + "); starting over");
          trainer = std::make_unique<Trainer>(p.config, p.factory, d, *rc.comm, execution);
        }
      }
      RunRecord rec;
      rec.run_id = p.id;
      rec.study = name;
      rec.workload = workload.name;
      rec.started_utc = utc_now();
      rec.study_text = study_text;
      rec.config = p.key_values;
      rec.workers = p.config.workers;
      StudyProgress progress(o, tag, study_eta, leader ? heartbeat : std::function<void()>());
      const CheckpointPolicy policy{ckpt, g.checkpoint_interval, g.checkpoint_steps};
      rec.result = trainer->run(&progress, policy);
      rec.finished_utc = utc_now();
      if (leader) {
        const auto io0 = Clock::now();
        rec.provenance = provenance(argc, argv, d, nprocs, g.deterministic, *trainer);
        write_run_file(file, rec);
        for (int q = 0; q < nprocs; ++q) fs::remove(ckpt_of(q), ec);
        if (const auto old = checkpoints.find(p.id); old != checkpoints.end()) {
          for (const auto& f : old->second) fs::remove(f, ec);  // also another layout's
        }
        const RunSummary& sm = rec.result.summary;
        char buf[200];
        std::snprintf(buf, sizeof buf, ": %s, final test accuracy %.2f %%, %.1f s", to_string(sm.status).c_str(),
                      100 * sm.final_test_accuracy, sm.wall_time_s);
        o.line(tag + p.id + " " + axes_str + buf);
        std::vector<std::string> skipped;
        index.rebuild(&skipped);
        results_io_s += std::chrono::duration<double>(Clock::now() - io0).count() + trainer->checkpoint_seconds();
        training_s += sm.wall_time_s;
      }
      taken_work += double(p.cost) / nprocs;
      return true;
    };
    auto elapsed_s = [&] { return std::chrono::duration<double>(Clock::now() - study_start).count(); };

    // The runs to do in the schedule's order, each taken through its claim, so
    // that other jobs on this study (docs/mpi.md) train each run once with this one.
    std::vector<std::string> ids;
    double total = 0;  // estimated cost of the runs to do
    for (const auto& pl : schedule) {
      ids.push_back(plan[pl.run].id);
      total += double(plan[pl.run].cost);
    }
    // A run whose file appeared or changed since the plan was done by another
    // group or job meanwhile.
    const auto finished_elsewhere = [&](std::size_t k) {
      const std::int64_t now = stamp(ids[k]);
      return now != 0 && now != planned_stamp[schedule[k].run];
    };
    ClaimQueue queue(runs_dir.string(), ids, g.claim_timeout, finished_elsewhere);
    const double heartbeat_s = std::min(60.0, g.claim_timeout / 4);
    auto last_beat = Clock::now();
    auto heartbeat_of = [&](std::size_t k) {
      last_beat = Clock::now();
      return [&, k] {
        if (std::chrono::duration<double>(Clock::now() - last_beat).count() < heartbeat_s) return;
        queue.heartbeat(k);
        last_beat = Clock::now();
      };
    };

    if (dynamic) {
      // Blocks of consecutive ranks, largest first: each takes the runs of its
      // size, then splits into the blocks of the next size (nested_blocks).
      std::map<int, std::vector<std::size_t>> of_size;  // processes -> positions in the schedule
      for (std::size_t k = 0; k < schedule.size(); ++k) of_size[int(schedule[k].ranks.size())].push_back(k);
      // `final_look`: every process of the job is through its runs; the blocks
      // form again, largest first, to take what another job has left stale since
      // a block split (its processes had nothing else to do).
      const auto take_runs = [&](const Block& b, bool final_look) {
        const std::vector<std::size_t>& positions = of_size.at(b.size);
        std::vector<std::string> size_ids;
        for (std::size_t k : positions) size_ids.push_back(ids[k]);
        ClaimQueue size_queue(runs_dir.string(), size_ids, g.claim_timeout,
                              [&](std::size_t j) { return finished_elsewhere(positions[j]); });
        Placement mine;
        for (int r = b.first; r < b.first + b.size; ++r) mine.ranks.push_back(r);
        const bool first = session.rank() == b.first;
#if DPSTUDY_WITH_MPI
        std::unique_ptr<mpi::RunGroup> group;
        if (b.size > 1) {
          group = std::make_unique<mpi::RunGroup>(mine.ranks, int(plan.size()) + (final_look ? session.size() : 0) + b.first);
        }
#else
        (void)final_look;
#endif
        for (;;) {
          long long j = first ? size_queue.next() : -1;
#if DPSTUDY_WITH_MPI
          if (group) group->broadcast(j);
#endif
          if (j < 0) break;
          const std::size_t k = positions[std::size_t(j)];
          mine.run = schedule[k].run;
          const double work = double(plan[mine.run].cost) / b.size;
          // As if every process worked at this one's rate so far: the study
          // takes total / processes of it. Which process has which run is not needed.
          run_one(
              mine,
              [&, work](double fraction, double run_eta) {
                const double done = taken_work + fraction * work;
                if (done <= 0) return 0.0;
                return std::max(run_eta, elapsed_s() * (total / (double(session.size()) * done) - 1));
              },
              heartbeat_of(k));
          if (first) queue.release(k);
        }
      };
      const std::vector<Block> blocks = nested_blocks(procs, session.size(), session.rank());
      for (const Block& b : blocks) take_runs(b, false);
      if (blocks.size() > 1) {
        for (const Block& b : blocks) take_runs(b, true);
      }
    } else {
      for (std::size_t k = 0; k < schedule.size(); ++k) {
        const Placement& pl = schedule[k];
        if (std::find(pl.ranks.begin(), pl.ranks.end(), session.rank()) == pl.ranks.end()) continue;
        const bool ran = run_one(
            pl,
            [&](double fraction, double) {
              const double at = (pl.start + (pl.end - pl.start) * fraction) / std::max(makespan, 1e-9);
              return at > 0 ? elapsed_s() * (1 - at) / at : 0.0;
            },
            heartbeat_of(k), [&, k] { return queue.take(k); });
        if (ran && session.rank() == pl.ranks.front()) queue.release(k);
      }
    }
    current_run = "-";
    session.barrier();
    if (!lead) return 0;
    std::vector<std::string> skipped;
    std::size_t indexed = index.rebuild(&skipped);
    // Another job on this study may have written a run file while this one was
    // indexing, and its own index before this one's: index until none is missing.
    const auto run_files = [&] {
      std::size_t n = 0;
      for (const auto& entry : fs::directory_iterator(runs_dir, ec)) {
        const std::string f = entry.path().filename().string();
        if (f.size() > 3 && f.compare(f.size() - 3, 3, ".h5") == 0 && f.find(".ckpt.") == std::string::npos) ++n;
      }
      return n;
    };
    for (int again = 0; again < 3 && run_files() > indexed + skipped.size(); ++again) {
      skipped.clear();
      indexed = index.rebuild(&skipped);
    }
    for (const auto& sk : skipped) out.line("# skipped corrupt run file in the index: " + sk);

    // The study's runs, from their files; a run without one is another job's, still running.
    int failed_checks = 0;
    std::size_t elsewhere = 0;
    std::printf("# %-16s  %-10s  %9s  %s\n", "run id", "status", "test acc", "axes");
    for (const auto& p : plan) {
      const std::string file = (runs_dir / (p.id + ".h5")).string();
      if (!fs::exists(file, ec)) {
        ++elsewhere;
        std::printf("  %-16s  %-10s  %9s  %s\n", p.id.c_str(), "elsewhere", "-", axes_text(p.values, swept).c_str());
        if (vm.count("expect_accuracy")) ++failed_checks;  // not checked here
        continue;
      }
      const h5::File f = h5::File::open_read(file);
      const h5::Group summary = f.root().open_group("summary");
      const double acc = summary.get_double("final_test_accuracy");
      const std::string status = summary.get_string("status");
      std::printf("  %-16s  %-10s  %8.2f%%  %s\n", p.id.c_str(), status.c_str(), 100 * acc,
                  axes_text(p.values, swept).c_str());
      if (vm.count("expect_accuracy") && !(status == "completed" && acc >= g.expect_accuracy)) ++failed_checks;
    }
    if (elsewhere > 0) {
      out.line("# study " + name + ": this job is done; " + std::to_string(elsewhere) + " of " +
                   std::to_string(plan.size()) + " runs are still running in another job (their claims in " +
                   runs_dir.string() + "), which indexes them when it finishes; " + std::to_string(indexed) +
                   " runs in " + study_dir + "/index.h5 now",
               0);
    } else {
      out.line("# study " + name + " done: " + std::to_string(indexed) + " runs in " + study_dir + "/index.h5", 0);
    }
    if (training_s > 0) {
      char buf[200];
      std::snprintf(buf, sizeof buf, "# results I/O: %.3f s (run files, index, checkpoints) for %.3f s of training: %.2f %%",
                    results_io_s, training_s, 100 * results_io_s / training_s);
      out.line(buf, 0);
    }
    if (!g.reproduce.empty()) return report_reproduction(g.reproduce, stored, plan.front().id, runs_dir.string());
    if (vm.count("expect_accuracy")) {
      std::printf("# check: %d run(s) below %.4f final test accuracy: %s\n", failed_checks, g.expect_accuracy,
                  failed_checks ? "FAILED" : "ok");
      return failed_checks ? 3 : 0;
    }
    return 0;
  } catch (const po::error& e) {
    return fail(session, prog, current_run, e.what(), 2, true);
  } catch (const UsageError& e) {
    return fail(session, prog, current_run, e.what(), 2, true);
  } catch (const std::exception& e) {
    return fail(session, prog, current_run, e.what(), 1, false);
  }
}

}  // namespace dpstudy
