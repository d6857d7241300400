// --mode throughput: training steps timed with Google Benchmark, one benchmark
// per distinct sweep point (docs/performance.md).
#include <ATen/record_function.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <set>

#include "dpstudy/error.hpp"
#include "dpstudy/kineto_trace.hpp"
#include "dpstudy/throughput.hpp"
#include "job_context.hpp"

namespace fs = std::filesystem;

namespace dpstudy {

namespace {

// A point's run while its benchmark runs.
struct State {
  std::unique_ptr<RunComm> comm;
  std::unique_ptr<Trainer> trainer;
};

// --profile: whole periods of at least 4 steps, traced on rank 0 while the
// run's other processes step with it, written as <folder>/<point>.json with
// the point's '/' and ':' as '_' and '-'.
std::function<void()> traced_steps(std::shared_ptr<State> state, const std::string& folder, std::string point,
                                   std::int64_t period, bool lead, bool cuda, bool quiet) {
  std::replace(point.begin(), point.end(), '/', '_');
  std::replace(point.begin(), point.end(), ':', '-');
  const std::string path = (fs::path(folder) / (point + ".json")).string();
  const std::int64_t steps = (4 + period - 1) / period * period;
  return [state, path, steps, lead, cuda, quiet] {
    Trainer& t = *state->trainer;
    std::unique_ptr<KinetoTrace> trace;
    if (lead) trace = std::make_unique<KinetoTrace>(cuda);
    for (std::int64_t i = 0; i < steps; ++i) {
      RECORD_USER_SCOPE("dpstudy_step");  // each step's launch, a range in the trace (tools/trace-summary)
      t.advance();
    }
    (void)t.read_losses();  // waits for the device: its work is in the trace
    if (!trace) return;
    trace->save(path);
    if (!quiet) std::fprintf(stderr, "# profile: %s (%lld steps)\n", path.c_str(), static_cast<long long>(steps));
  };
}

// One benchmark per distinct sweep point, each set up, stepped and torn down
// on processes 0..P-1 of the job.
std::vector<ThroughputPoint> throughput_points(const Job& job) {
  const JobOptions& g = job.request.options;
  const Session& session = job.session;
  const std::vector<std::string>& swept = job.request.swept;
  const std::string& workload = job.workload;
  const at::Device& device = job.device;
  static const std::set<std::string> neutral = {"seed",           "data_seed", "trial",         "lr",
                                                "batch_lr_ratio", "momentum",  "lr_end_factor", "weight_decay",
                                                "lr_decay_steps"};
  std::vector<ThroughputPoint> points;
  std::set<std::string> names;
  const Execution& execution = job.execution;
  for (const PlannedRun& p : job.plan.runs) {
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
      if (neutral.count(k) || k == "workers" || k == "batch_size" || k == "sync_period" || k == kGlobalBatch) {
        continue;  // in the point's name already (global_batch: workers x batch)
      }
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
    const TrainingData* d = &job.data.at(c.dataset);
    const int tag = int(points.size());
    ThroughputPoint tp;
    tp.name = point;
    tp.params = std::move(params);
    tp.steps_per_period = sync >= 1 ? sync : 1;
    tp.workers = c.workers;
    tp.member = session.rank() < procs;
    tp.params.emplace_back("parallel",
                           to_string(resolve_parallelism(execution.parallel, c.workers / procs, g.threads, device)));
    tp.params.emplace_back("cuda_graphs", resolve_cuda_graphs(execution.cuda_graphs, c, device) ? "on" : "off");
    tp.setup = [state, c, factory = p.factory, d, ranks, tag, execution] {
      state->comm = std::make_unique<RunComm>(ranks, c.workers, tag);
      state->trainer = std::make_unique<Trainer>(c, factory, *d, *state->comm->comm, execution);
    };
    tp.run = [state, c](std::int64_t steps) {
      Trainer& t = *state->trainer;
      const double comm0 = t.comm_seconds();
      const std::int64_t bytes0 = t.comm_bytes();
      const auto t0 = std::chrono::steady_clock::now();
      // The losses read once, at the end: a GPU's steps then queue without waiting, as in a run.
      for (std::int64_t i = 0; i < steps; ++i) t.advance();
      (void)t.read_losses();
      PeriodSample s;
      s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      s.comm_seconds = t.comm_seconds() - comm0;
      s.bytes = t.comm_bytes() - bytes0;
      s.samples = steps * c.global_batch();
      return s;
    };
    tp.teardown = [state] {
      state->trainer.reset();
      state->comm.reset();
    };
    if (!g.profile.empty()) {
      tp.profile =
          traced_steps(state, g.profile, point, tp.steps_per_period, session.rank() == 0, device.is_cuda(), g.quiet);
    }
    points.push_back(std::move(tp));
  }
  return points;
}

}  // namespace

// --mode throughput: one Google Benchmark benchmark per distinct sweep point
// (axes that do not change the work of a step, such as seeds and learning
// rates, are left out of the points). Each point's run occupies processes
// 0..P-1 of the job; the figures go to <study>/throughput.h5.
int run_throughput_mode(const Job& job) {
  const JobOptions& g = job.request.options;
  const Session& session = job.session;
  const std::string& workload = job.workload;
  std::vector<ThroughputPoint> points = throughput_points(job);
  ThroughputOptions o;
  o.warmup_steps = g.warmup_steps;
  o.iterations = g.iterations > 0 ? g.iterations : session.size() > 1 ? 10 : 0;
  o.study = job.request.name;
  o.workload = workload;
  o.quiet = g.quiet;
  // A collective: where each process computes, for the table and the warning of a mixed partition.
  const Places places = gather_places(job);
  std::vector<int> all(static_cast<std::size_t>(session.size()));
  for (int r = 0; r < session.size(); ++r) all[std::size_t(r)] = r;
  o.provenance = provenance(job, places, all);
  o.provenance.emplace_back("threads", std::int64_t(g.threads));
  const bool lead = session.rank() == 0;
  if (job.request.study_mode) {
    lead_step(session, [&] {  // rank 0's error printed once, every process ended with its status
      std::error_code ec;
      fs::create_directories(job.request.study_dir, ec);
      if (ec) throw UsageError(job.request.study_dir + ": cannot create the results folder (" + ec.message() + ")");
    });
    if (lead) o.hdf5_path = (fs::path(job.request.study_dir) / "throughput.h5").string();
  }
  if (!g.profile.empty()) {
    lead_step(session, [&] {  // refused before any benchmark runs
      const std::string& why = KinetoTrace::unavailable();
      if (!why.empty()) throw UsageError("--profile " + g.profile + ": " + why);
      std::error_code ec;
      fs::create_directories(g.profile, ec);
      if (ec) throw UsageError("--profile " + g.profile + ": cannot create the folder (" + ec.message() + ")");
    });
  }
  if (lead) {  // slips in the sweep (an exclude rule that drops nothing); stderr keeps a JSON report clean
    for (const auto& note : job.plan.notes) std::fprintf(stderr, "%s\n", note.c_str());
    if (!places.note.empty()) std::fprintf(stderr, "%s\n", places.note.c_str());
  }
  if (lead && !g.quiet) {
    print_header(job);
    std::printf("# throughput: %zu benchmark(s) on %d process(es); timed: one sync period per iteration, the "
                "slowest process's time (docs/performance.md)\n", points.size(), session.size());
    std::fflush(stdout);
  }
  return run_throughput(std::move(points), o, lead, [&session](double v) { return session.max(v); }, g.benchmark_flags);
}

}  // namespace dpstudy
