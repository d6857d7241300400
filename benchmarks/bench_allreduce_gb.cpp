// The deterministic allreduce (mean) against MPI_Allreduce + divide on Google
// Benchmark, under mpirun: one benchmark per method and size, float32, one
// worker per process. Each iteration's time is the slowest rank's (MPI_MAX),
// given as manual time after a barrier; iteration counts are fixed so that every
// rank runs the same loop. Rank 0 reports; Google Benchmark's flags apply
// (--benchmark_filter, --benchmark_format=json, ...). The OSU-style table with
// min/avg/max per rank is dpstudy-bench-allreduce.
//
//   mpirun -np 2 build/benchmarks/dpstudy-bench-allreduce-gb [--benchmark_filter=...]
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <memory>

#include "dpstudy/mpi.hpp"

using namespace dpstudy;

namespace {

class NullReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

template <typename F>
void timed(benchmark::State& state, std::int64_t bytes, int n, F&& op) {
  for (int i = 0; i < 3; ++i) op();  // warm-up
  double total = 0;
  for (auto _ : state) {
    MPI_Barrier(MPI_COMM_WORLD);
    const auto t0 = std::chrono::steady_clock::now();
    op();
    double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    state.SetIterationTime(t);
    total += t;
  }
  const double alg = double(bytes) * double(state.iterations()) / total;
  state.counters["alg_bytes_per_s"] = alg;
  state.counters["bus_bytes_per_s"] = alg * 2.0 * (n - 1) / n;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    mpi::Session session;
    if (!session.active()) {
      std::fprintf(stderr, "dpstudy-bench-allreduce-gb: run it under mpirun (e.g. mpirun -np 2 %s)\n", argv[0]);
      return 2;
    }
    benchmark::Initialize(&argc, argv);
    at::set_num_threads(1);
    const int n = session.size();
    std::vector<int> ranks(static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r) ranks[std::size_t(r)] = r;
    mpi::RunGroup group(ranks, 1);
    MpiCommunicator comm(group, n);
    for (std::int64_t bytes = 4096; bytes <= (64 << 20); bytes *= 4) {
      const std::int64_t count = bytes / 4;
      const int iterations = int(std::max<std::int64_t>(10, std::min<std::int64_t>(200, (256 << 20) / bytes / 4)));
      at::manual_seed(session.rank() + 1);
      auto input = std::make_shared<at::Tensor>(at::randn({count}));
      auto out = std::make_shared<at::Tensor>(at::empty({count}));
      benchmark::RegisterBenchmark(("deterministic_mean/bytes:" + std::to_string(bytes)).c_str(),
                                   [=, &comm](benchmark::State& state) {
                                     std::vector<at::Tensor> local = {*input};
                                     timed(state, bytes, n, [&] { comm.mean(local, 0, n, *out); });
                                   })
          ->UseManualTime()->Iterations(iterations)->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark(("MPI_Allreduce/bytes:" + std::to_string(bytes)).c_str(),
                                   [=](benchmark::State& state) {
                                     timed(state, bytes, n, [&] {
                                       MPI_Allreduce(input->data_ptr<float>(), out->data_ptr<float>(), int(count),
                                                     MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
                                       out->div_(double(n));
                                     });
                                   })
          ->UseManualTime()->Iterations(iterations)->Unit(benchmark::kMicrosecond);
    }
    NullReporter null;
    if (session.rank() == 0) {
      benchmark::RunSpecifiedBenchmarks();
    } else {
      benchmark::RunSpecifiedBenchmarks(&null);
    }
    benchmark::Shutdown();
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dpstudy-bench-allreduce-gb: error: %s\n", e.what());
    return 1;
  }
}
