// OSU-style allreduce benchmark: dpstudy's deterministic mean (recursive
// halving over a fixed pairwise tree, then all-gather) against MPI_Allreduce
// (plus the same division), float32, in one run.
//
//   mpirun -np 4 build/benchmarks/dpstudy-bench-allreduce [--min BYTES] [--max BYTES]
//
// Protocol: results checked against MPI_Allreduce before timing; per size, 5
// warm-up iterations apart from the timed ones; a barrier before every
// iteration; each rank averages its iteration times; the table gives min / avg /
// max of those over ranks, rank 0 prints; exit status 1 if any result was wrong. Bus bandwidth = size / time x 2(n-1)/n
// (nccl-tests' convention), comparable with a link's peak.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "dpstudy/mpi.hpp"

using namespace dpstudy;

namespace {

struct Stat {
  double min, avg, max;
};

Stat over_ranks(double mine, int size) {
  Stat s{};
  MPI_Allreduce(&mine, &s.min, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&mine, &s.max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(&mine, &s.avg, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  s.avg /= size;
  return s;
}

template <typename F>
double time_us(F&& op, int iterations) {
  for (int i = 0; i < 5; ++i) op();  // warm-up
  double total = 0;
  for (int i = 0; i < iterations; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    const auto t0 = std::chrono::steady_clock::now();
    op();
    total += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  }
  return total / iterations;
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t min_bytes = 4096, max_bytes = 64 << 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--min")) min_bytes = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--max")) max_bytes = std::atoll(argv[i + 1]);
  }
  try {
    mpi::Session session;
    if (!session.active()) {
      std::fprintf(stderr, "dpstudy-bench-allreduce: run it under mpirun (e.g. mpirun -np 2 %s)\n", argv[0]);
      return 2;
    }
    at::set_num_threads(1);
    const int n = session.size();
    std::vector<int> ranks(static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r) ranks[std::size_t(r)] = r;
    mpi::RunGroup group(ranks, 1);
    MpiCommunicator comm(group, n);  // one worker per process
    if (session.rank() == 0) {
      std::printf("# dpstudy deterministic allreduce (mean) vs MPI_Allreduce + divide, %d processes, float32\n", n);
      std::printf("# %10s %10s %12s %12s %12s %12s %12s %12s %7s %7s\n", "size (B)", "count", "det avg(us)",
                  "det min(us)", "det max(us)", "mpi avg(us)", "det bw(GB/s)", "mpi bw(GB/s)", "ratio", "#wrong");
    }
    long long total_wrong = 0;
    for (std::int64_t bytes = min_bytes; bytes <= max_bytes; bytes *= 2) {
      const std::int64_t count = bytes / 4;
      at::manual_seed(session.rank() + 1);
      const at::Tensor input = at::randn({count});
      std::vector<at::Tensor> local = {input};
      at::Tensor det = at::empty({count}), ref = at::empty({count});
      auto run_det = [&] { comm.mean(local, 0, n, det); };
      auto run_mpi = [&] {
        MPI_Allreduce(input.data_ptr<float>(), ref.data_ptr<float>(), int(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        ref.div_(double(n));
      };
      run_det();
      run_mpi();
      long long wrong = (det - ref).abs().gt(ref.abs() * 1e-5 + 1e-6).sum().item<std::int64_t>();
      MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
      total_wrong += wrong;
      const int iterations = int(std::max<std::int64_t>(10, std::min<std::int64_t>(200, (256 << 20) / bytes / 4)));
      const Stat d = over_ranks(time_us(run_det, iterations), n);
      const Stat m = over_ranks(time_us(run_mpi, iterations), n);
      const double factor = 2.0 * (n - 1) / n;
      const double det_bw = double(bytes) / (d.avg * 1e3) * factor, mpi_bw = double(bytes) / (m.avg * 1e3) * factor;
      if (session.rank() == 0) {
        std::printf("  %10lld %10lld %12.1f %12.1f %12.1f %12.1f %12.3f %12.3f %7.2f %7lld\n", (long long)bytes,
                    (long long)count, d.avg, d.min, d.max, m.avg, det_bw, mpi_bw, det_bw / mpi_bw, wrong);
      }
    }
    return total_wrong == 0 ? 0 : 1;  // a wrong result makes the figures meaningless
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dpstudy-bench-allreduce: error: %s\n", e.what());
    return 1;
  }
}
