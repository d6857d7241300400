#include "dpstudy/throughput.hpp"

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>

#include "dpstudy/error.hpp"
#include "dpstudy/hdf5.hpp"
#include "dpstudy/runtime_info.hpp"
#include "dpstudy/results.hpp"

// Timing protocol (docs/performance.md):
// - One benchmark per sweep point; each call builds the run afresh and runs
//   `warmup_steps` untimed steps (default: one period), so caches, allocator
//   pools and the first averaging are out of the measurement.
// - An iteration is one period: H steps (H = the sync period; 1 when synchronous
//   or never averaging), the averaging that ends it included. Evaluation never
//   happens here (it lives outside Trainer::step).
// - Its time is the slowest process's (MPI_MAX over the job), given to Google
//   Benchmark as manual time, so every process sees the same figures and takes
//   the same decisions; under MPI the iteration count is fixed for that reason.
// - Counters are totals over the timed iterations divided by their total time:
//   samples/s (all workers), steps/s, the fraction of the time spent averaging
//   (on the lead process), the bytes averaged per worker per second (alg_bw) and
//   the ring-allreduce bus bandwidth alg_bw * 2 (W - 1) / W; and the largest
//   process's peak resident memory over the benchmark (runtime_info.hpp).

namespace dpstudy {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Google Benchmark 1.8 replaced Run::error_occurred by Run::skipped.
template <class R>
auto failed(const R& r, int) -> decltype(bool(r.skipped)) {
  return bool(r.skipped);
}
template <class R>
auto failed(const R& r, long) -> decltype(bool(r.error_occurred)) {
  return r.error_occurred;
}

// Discards everything: the display of non-lead processes.
class NullReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

struct Row {
  std::size_t point;
  std::string name, run_type, aggregate;
  std::int64_t repetition, iterations;
  double seconds_per_iteration;
  std::map<std::string, double> counters;
};

// Forwards to the display reporter and keeps every run for the HDF5 table.
class Collector : public benchmark::BenchmarkReporter {
 public:
  Collector(benchmark::BenchmarkReporter& display, const std::map<std::string, std::size_t>& index)
      : display_(display), index_(index) {}
  bool ReportContext(const Context& c) override { return display_.ReportContext(c); }
  void ReportRuns(const std::vector<Run>& runs) override {
    display_.ReportRuns(runs);
    for (const Run& r : runs) {
      const auto it = index_.find(r.run_name.function_name);
      if (it == index_.end() || failed(r, 0)) continue;
      Row row{it->second, r.benchmark_name(), r.run_type == Run::RT_Aggregate ? "aggregate" : "iteration",
              r.aggregate_name, std::int64_t(r.repetition_index), std::int64_t(r.iterations),
              r.GetAdjustedRealTime() / benchmark::GetTimeUnitMultiplier(r.time_unit), {}};
      for (const auto& [k, c] : r.counters) row.counters[k] = c.value;
      rows.push_back(std::move(row));
    }
  }
  void Finalize() override { display_.Finalize(); }
  std::vector<Row> rows;

 private:
  benchmark::BenchmarkReporter& display_;
  const std::map<std::string, std::size_t>& index_;
};

const char* kCounters[] = {"samples_per_s",   "steps_per_s",     "comm_fraction",
                           "alg_bytes_per_s", "bus_bytes_per_s", "peak_rss_mib"};
const char* kCounterUnits[] = {"samples/s", "steps/s", "fraction", "bytes/s", "bytes/s", "MiB"};

void write_table(const std::string& path, const ThroughputOptions& o, const std::vector<ThroughputPoint>& points,
                 const std::vector<Row>& rows) {
  write_hdf5_atomically(path, [&](h5::Group& root) {
    root.set("schema", "dpstudy.throughput/1");
    root.set("study", o.study);
    root.set("workload", o.workload);
    {
      h5::Group prov = root.create_group("provenance");  // what the figures were measured with
      set_attributes(prov, o.provenance);
    }
    h5::Group t = root.create_group("throughput");
    std::vector<std::string> name, run_type, aggregate;
    std::vector<std::int64_t> repetition, iterations;
    std::vector<double> seconds;
    for (const Row& r : rows) {
      name.push_back(r.name);
      run_type.push_back(r.run_type);
      aggregate.push_back(r.aggregate);
      repetition.push_back(r.repetition);
      iterations.push_back(r.iterations);
      seconds.push_back(r.seconds_per_iteration);
    }
    t.write("benchmark", name);
    t.write("run_type", run_type);
    t.write("aggregate", aggregate);
    t.write("repetition", repetition);
    t.write("iterations", iterations, "periods");
    t.write("time_per_period_s", seconds, "s");
    for (std::size_t c = 0; c < std::size(kCounters); ++c) {
      std::vector<double> v;
      for (const Row& r : rows) {
        const auto it = r.counters.find(kCounters[c]);
        v.push_back(it == r.counters.end() ? kNaN : it->second);
      }
      t.write(kCounters[c], v, kCounterUnits[c]);
    }
    // The sweep point of each row, one column per parameter.
    std::vector<std::string> keys;
    for (const auto& p : points) {
      for (const auto& [k, v] : p.params) {
        if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
      }
    }
    for (const std::string& k : keys) {
      std::vector<std::string> text;
      std::vector<std::int64_t> ints;
      std::vector<double> reals;
      char kind = 0;
      for (const Row& r : rows) {
        const auto& params = points[r.point].params;
        const auto it = std::find_if(params.begin(), params.end(), [&](const auto& kv) { return kv.first == k; });
        if (it == params.end()) {
          text.emplace_back();
          ints.push_back(-1);
          reals.push_back(kNaN);
          continue;
        }
        if (const auto* i = std::get_if<std::int64_t>(&it->second)) {
          kind = kind ? kind : 'i';
          ints.push_back(*i);
          reals.push_back(double(*i));
        } else if (const auto* d = std::get_if<double>(&it->second)) {
          kind = 'd';
          ints.push_back(-1);
          reals.push_back(*d);
        } else {
          kind = 's';
          ints.push_back(-1);
          reals.push_back(kNaN);
        }
        text.push_back(to_text(it->second));
      }
      if (kind == 'i') {
        t.write(k, ints);
      } else if (kind == 'd') {
        t.write(k, reals);
      } else {
        t.write(k, text);
      }
    }
  }, "throughput-write");
}

}  // namespace

int run_throughput(std::vector<ThroughputPoint> points, const ThroughputOptions& options, bool lead,
                   const std::function<double(double)>& slowest, std::vector<std::string> flags) {
  // Google Benchmark reads its flags from argv; only the lead process writes files.
  std::vector<std::string> args{"dpstudy-" + options.workload};
  for (const auto& f : flags) {
    if (!lead && f.rfind("--benchmark_out", 0) == 0) continue;
    args.push_back(f);
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  int argc = int(argv.size());
  benchmark::Initialize(&argc, argv.data());
  if (argc > 1) throw UsageError(std::string("unrecognised Google Benchmark flag '") + argv[1] + "'");

  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < points.size(); ++i) {
    ThroughputPoint* p = &points[i];
    index[p->name] = i;
    const std::int64_t warmup = options.warmup_steps > 0 ? options.warmup_steps : p->steps_per_period;
    auto* b = benchmark::RegisterBenchmark(p->name.c_str(), [p, warmup, &slowest](benchmark::State& state) {
      const bool fresh = p->member && reset_peak_memory();
      if (p->member) {
        p->setup();
        p->run(warmup);
      }
      double seconds = 0, comm = 0;
      std::int64_t samples = 0, bytes = 0, periods = 0;
      for (auto _ : state) {
        PeriodSample s;
        if (p->member) s = p->run(p->steps_per_period);
        const double t = slowest(s.seconds);
        state.SetIterationTime(t);
        seconds += t;
        comm += s.comm_seconds;
        samples += s.samples;
        bytes += s.bytes;
        ++periods;
      }
      // The largest process's peak over setup, warm-up and the timed periods (-1: unknown on all of them).
      const double own = fresh ? peak_memory_mib() : -1;
      const double peak = slowest(std::isfinite(own) ? own : -1);
      if (p->member && p->profile && !p->profiled) p->profile();  // the same on every process: a collective
      p->profiled = true;
      if (p->member) p->teardown();
      if (seconds <= 0) return;
      const double alg = double(bytes) / seconds;
      state.counters["samples_per_s"] = double(samples) / seconds;
      state.counters["steps_per_s"] = double(periods * p->steps_per_period) / seconds;
      state.counters["comm_fraction"] = comm / seconds;
      state.counters["alg_bytes_per_s"] = alg;
      state.counters["bus_bytes_per_s"] = alg * 2.0 * double(p->workers - 1) / double(p->workers);
      state.counters["peak_rss_mib"] = peak >= 0 ? peak : kNaN;
    });
    b->UseManualTime()->Unit(benchmark::kMillisecond);
    if (options.iterations > 0) b->Iterations(options.iterations);
  }
  NullReporter null;
  std::unique_ptr<benchmark::BenchmarkReporter> console;
  if (lead) {
    // Google Benchmark's --benchmark_format and --benchmark_color, for the display we wrap.
    std::string format = "console", color = "auto";
    for (const auto& f : flags) {
      if (f.rfind("--benchmark_format=", 0) == 0) format = f.substr(19);
      if (f.rfind("--benchmark_color=", 0) == 0) color = f.substr(18);
    }
    // mpirun gives each process a pseudo-terminal of its own whatever the user's
    // stdout is (a file, a pipe): colours only on request there.
    const bool colored = color == "true" || color == "yes" ||
                         (color == "auto" && isatty(fileno(stdout)) && !launched_by_mpi());
    if (format == "json") {
      console = std::make_unique<benchmark::JSONReporter>();
    } else {  // Google Benchmark deprecates its CSV reporter: console for anything else
      console = std::make_unique<benchmark::ConsoleReporter>(colored ? benchmark::ConsoleReporter::OO_ColorTabular
                                                                     : benchmark::ConsoleReporter::OO_Tabular);
    }
  }
  Collector collector(lead ? *console : static_cast<benchmark::BenchmarkReporter&>(null), index);
  const std::size_t ran = benchmark::RunSpecifiedBenchmarks(&collector);
  benchmark::Shutdown();
  if (ran == 0) {  // the same filter on every process: all stop here
    std::string filter;
    for (const auto& f : flags) {
      if (f.rfind("--benchmark_filter=", 0) == 0) filter = f.substr(19);
    }
    throw ConfigError("benchmark_filter", filter,
                      "matches none of the " + std::to_string(points.size()) +
                          " benchmark(s) (list them with --benchmark_list_tests=true)");
  }
  if (lead && !options.hdf5_path.empty() && !collector.rows.empty()) {
    write_table(options.hdf5_path, options, points, collector.rows);
    if (!options.quiet) std::printf("# throughput figures: %s (group /throughput)\n", options.hdf5_path.c_str());
  }
  return 0;
}

}  // namespace dpstudy
