// Throughput mode (--mode throughput): every sweep point becomes one Google
// Benchmark benchmark. The timing protocol is written in throughput.cpp and
// docs/performance.md.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dpstudy/run_config.hpp"

namespace dpstudy {

// What one timed period of a run did: its wall time on this process, the part of
// it spent averaging, and what it processed and averaged.
struct PeriodSample {
  double seconds = 0, comm_seconds = 0;
  std::int64_t samples = 0;  // training samples, all workers
  std::int64_t bytes = 0;    // bytes averaged per worker
};

// A sweep point as its benchmark sees it. Every process registers every point;
// those that are not `member` of its run wait for the others in each iteration.
struct ThroughputPoint {
  std::string name;                   // mlp-mnist/workers:4/batch:128/sync:8/procs:1/device:cpu
  KeyValues params;                   // the same, typed, for the HDF5 table
  std::int64_t steps_per_period = 1;  // H: a period is H steps and the averaging that ends them
  int workers = 1;
  bool member = true;
  std::function<void()> setup;                          // builds the run (collective over its processes)
  std::function<PeriodSample(std::int64_t steps)> run;  // runs `steps` steps
  std::function<void()> teardown;
  // Untimed, once, after the timed periods (--profile): steps under a trace. Null: none.
  std::function<void()> profile;
  bool profiled = false;
};

struct ThroughputOptions {
  std::int64_t warmup_steps = 0;  // untimed steps after setup; 0 = one period
  std::int64_t iterations = 0;    // 0: Google Benchmark decides (a single process only)
  std::string hdf5_path;          // rank 0 writes the figures here ("" = nowhere)
  std::string study, workload;
  KeyValues provenance;  // written as the table's /provenance (results/README.md)
  bool quiet = false;  // only Google Benchmark's report on stdout (e.g. --benchmark_format=json)
};

// Registers the points, runs them with Google Benchmark's own flags
// (--benchmark_filter, --benchmark_repetitions, --benchmark_out, ...), reports on
// the `lead` process and writes the HDF5 table. `slowest` returns the largest of
// the values the processes pass (MPI_MAX over the job; the identity alone).
int run_throughput(std::vector<ThroughputPoint> points, const ThroughputOptions& options, bool lead,
                   const std::function<double(double)>& slowest, std::vector<std::string> benchmark_flags);

}  // namespace dpstudy
