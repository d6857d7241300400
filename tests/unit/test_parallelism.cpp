// How a process spreads its threads or streams (--parallel): resolved as
// documented, and the workers side by side give the bits of one thread.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "dpstudy/config.hpp"
#include "dpstudy/cuda_streams.hpp"
#include "dpstudy/error.hpp"

#include "training_support.hpp"

using namespace dpstudy;
using namespace dpstudy::test;

TEST(Training, ParallelismResolvesAsDocumented) {
  EXPECT_EQ(parse_parallelism("auto"), Parallelism::automatic);
  EXPECT_EQ(parse_parallelism("workers"), Parallelism::workers);
  EXPECT_EQ(parse_parallelism("operations"), Parallelism::operations);
  EXPECT_THROW(parse_parallelism("threads"), ConfigError);
  const at::Device cpu(at::kCPU);
  EXPECT_EQ(resolve_parallelism(Parallelism::automatic, 4, 4, cpu), Parallelism::workers);
  EXPECT_EQ(resolve_parallelism(Parallelism::automatic, 8, 2, cpu), Parallelism::workers);
  EXPECT_EQ(resolve_parallelism(Parallelism::automatic, 2, 4, cpu), Parallelism::operations);
  EXPECT_EQ(resolve_parallelism(Parallelism::automatic, 1, 1, cpu), Parallelism::workers);  // one thread: the same
  EXPECT_EQ(resolve_parallelism(Parallelism::operations, 8, 2, cpu), Parallelism::operations);
  EXPECT_EQ(resolve_parallelism(Parallelism::workers, 1, 8, cpu), Parallelism::workers);
  // A GPU: workers on streams of their own wherever there are two, whatever the threads.
  const at::Device gpu(at::kCUDA, 0);
  EXPECT_EQ(resolve_parallelism(Parallelism::automatic, 8, 2, gpu), Parallelism::workers);
  EXPECT_EQ(resolve_parallelism(Parallelism::automatic, 2, 16, gpu), Parallelism::workers);
  EXPECT_EQ(resolve_parallelism(Parallelism::automatic, 1, 16, gpu), Parallelism::operations);
  EXPECT_EQ(resolve_parallelism(Parallelism::operations, 8, 2, gpu), Parallelism::operations);
  EXPECT_EQ(resolve_parallelism(Parallelism::workers, 8, 1, gpu), Parallelism::workers);
}

// Replica streams need a CUDA device: the error says which device and why. A
// run's own stream is nothing on the CPU, and in a build without CUDA says so.
TEST(Training, ReplicaStreamsNeedACudaDevice) {
  try {
    ReplicaStreams streams(at::Device(at::kCPU));
    FAIL() << "ReplicaStreams on the CPU";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cpu"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(OwnStreamGuard(at::Device(at::kCPU)));
#if !DPSTUDY_CUDA
  try {
    OwnStreamGuard own(at::Device(at::kCUDA, 0));
    FAIL() << "OwnStreamGuard on cuda:0 in a build without CUDA";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("DPSTUDY_WITH_CUDA=OFF"), std::string::npos) << e.what();
  }
#endif
}

// The promise of --parallel workers: the workers side by side on 2 threads give
// the bits of the same run on one thread (synchronous, local SGD with groups,
// validation and divergence, SNIP pruning, convolutions with batch norm,
// fewer workers than threads, more workers than threads).
TEST(Training, WorkersSideBySideGiveTheBitsOfOneThread) {
  const ThreadsGuard restore;
  struct Case {
    std::string name;
    std::function<void(RunConfig&)> set;
    ModelFactory model;
  };
  const std::vector<Case> cases = {
      {"synchronous, 4 workers", [](RunConfig&) {}, tiny()},
      {"local SGD, groups, validation, 4 workers",
       [](RunConfig& c) {
         c.sync_period = 4;
         c.group_size = 2;
         c.group_sync_period = 2;
         c.overlap = 0.25;
         c.validation_fraction = 0.1;
         c.eval_every = 3;
       },
       tiny()},
      {"SNIP, 3 workers",
       [](RunConfig& c) {
         c.workers = 3;
         c.sparsity = 0.8;
         c.pruning = Pruning::snip;
         c.snip_batches = 2;
       },
       tiny()},
      {"convolution and batch norm, local SGD",
       [](RunConfig& c) {
         c.sync_period = 2;
         c.average_buffers = true;
       },
       [] { return std::make_shared<TinyCnn>(); }},
      {"one worker", [](RunConfig& c) { c.workers = 1; }, tiny()},
  };
  for (const Case& k : cases) {
    RunConfig c = base_config();
    c.workers = 4;
    c.batch_size = 8;
    k.set(c);
    auto run = [&](int threads, Parallelism parallel) {
      at::set_num_threads(threads);
      InProcessCommunicator comm(c.workers);
      Trainer t(c, k.model, data(), comm, Execution{parallel, threads});
      EXPECT_EQ(t.parallelism(), Parallelism::workers) << k.name;
      EXPECT_EQ(t.threads(), threads) << k.name;
      return t.run();
    };
    const RunResult one = run(1, Parallelism::automatic);
    const RunResult side_by_side = run(2, Parallelism::workers);
    ASSERT_FALSE(one.train.loss.empty()) << k.name;
    expect_same_bits(one, side_by_side, k.name);
  }
}

TEST(Training, ATrainerToldNoThreadCountFindsTheProcesssAfterASideBySideOne) {
  const ThreadsGuard restore;
  at::set_num_threads(2);
  RunConfig c = base_config();
  c.workers = 2;
  InProcessCommunicator comm(2);
  {
    Trainer side(c, tiny(), data(), comm, Execution{Parallelism::workers, 0});
    EXPECT_EQ(side.threads(), 2);
    side.step();
    EXPECT_EQ(at::get_num_threads(), 1);  // LibTorch's own count, while its workers step side by side
  }
  Trainer next(c, tiny(), data(), comm, Execution{Parallelism::operations, 0});
  EXPECT_EQ(next.threads(), 2);
  EXPECT_EQ(next.parallelism(), Parallelism::operations);
  EXPECT_EQ(at::get_num_threads(), 2);
}
