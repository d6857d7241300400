// MpiCommunicator::mean against the in-process tree, bit for bit, under mpirun:
// the world, groups within a process, groups of other processes' workers and
// groups across processes (CTest mpi_communicator_2, _3, _4; 3 processes take
// the gather path). The training runs over processes are mpi_layouts'.
// Every process makes every call: an averaging is collective, so the checks
// are EXPECTs, which let a failing process go on to the next call.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "dpstudy/communicator.hpp"
#include "dpstudy/mpi.hpp"
#include "training_support.hpp"

namespace dpstudy {
namespace {

int processes = 1;

std::vector<int> all_ranks() {
  std::vector<int> ranks(static_cast<std::size_t>(processes));
  std::iota(ranks.begin(), ranks.end(), 0);
  return ranks;
}

// Every group size the communicator takes for `local` workers a process: one
// that divides `local`, or a multiple of it, that divides the world.
void expect_every_mean(int local, std::int64_t n) {
  const int workers = local * processes;
  const mpi::RunGroup group(all_ranks(), 7);
  MpiCommunicator comm(group, workers);
  InProcessCommunicator reference(workers);
  const auto all = test::worker_buffers(workers, n);
  const int first_here = comm.first_local_worker();
  const std::vector<at::Tensor> here(all.begin() + first_here, all.begin() + first_here + local);
  for (int count = 1; count <= workers; ++count) {
    if (workers % count != 0 || (count % local != 0 && local % count != 0)) continue;
    for (int first = 0; first < workers; first += count) {
      const std::string what = std::to_string(workers) + " workers, " + std::to_string(local) +
                               " a process, mean of [" + std::to_string(first) + ", " + std::to_string(first + count) +
                               ") on rank " + std::to_string(group.rank()) + ", n = " + std::to_string(n);
      at::Tensor out = at::full({n}, std::numeric_limits<float>::quiet_NaN());
      comm.mean(here, first, count, out);
      if (first < first_here + local && first_here < first + count) {
        at::Tensor expected = at::empty({n});
        reference.mean(all, first, count, expected);
        EXPECT_TRUE(at::equal(out, expected)) << what;
      } else {  // hosted elsewhere: nothing written
        EXPECT_TRUE(at::isnan(out).all().item<bool>()) << what;
      }
    }
  }
}

TEST(MpiCommunicator, EveryGroupsMeanIsTheInProcessTreeBitForBit) {
  for (int local : {1, 2, 3, 4}) {
    for (std::int64_t n : {1, 5, 1001}) expect_every_mean(local, n);
  }
}

TEST(MpiCommunicator, AGroupAcrossProcessesMustBeAMultipleOfTheirWorkers) {
  const mpi::RunGroup group(all_ranks(), 8);
  MpiCommunicator comm(group, 2 * processes);
  EXPECT_TRUE(comm.mean_needs_host());  // MPI's calls: a CUDA graph cannot hold them
  const auto all = test::worker_buffers(2 * processes, 5);
  const std::vector<at::Tensor> here(all.begin() + comm.first_local_worker(),
                                     all.begin() + comm.first_local_worker() + 2);
  at::Tensor out = at::empty({5});
  // Refused on every process before any MPI call, so none waits for another.
  EXPECT_THROW(comm.mean(here, 0, 3, out), ConfigError);
}

}  // namespace
}  // namespace dpstudy

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const dpstudy::mpi::Session session;
  if (!session.active()) {
    std::fprintf(stderr, "dpstudy-mpi-unit-tests: run it under mpirun (e.g. mpirun -n 2 %s)\n", argv[0]);
    return 2;
  }
  dpstudy::processes = session.size();
  at::set_num_threads(1);
  return RUN_ALL_TESTS();
}
