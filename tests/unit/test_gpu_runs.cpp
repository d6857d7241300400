// What a GPU takes, decided without one: how many runs at once fit its memory,
// and which runs qualify for whole-step CUDA graphs.
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <cmath>

#include "dpstudy/cuda_graphs.hpp"
#include "dpstudy/device_memory.hpp"
#include "dpstudy/error.hpp"

#include "training_support.hpp"

using namespace dpstudy;
using namespace dpstudy::test;

// --runs_at_once auto on a GPU: runs of a measured peak fit in 80 % of the
// GPU's memory shared by its processes, less each process's CUDA context.
TEST(RunsAtOnce, AsManyAsFitInTheGpusMemory) {
  const double h200 = 143771;  // MiB
  // 0.8 * 143771 - 512 = 114504.8 MiB: 57 runs of 2000 MiB.
  EXPECT_EQ(runs_that_fit(h200, 1, 2000), 57);
  // Four processes on the GPU: 0.8 * 143771 / 4 - 512 = 28242.2 MiB each: 14 runs.
  EXPECT_EQ(runs_that_fit(h200, 4, 2000), 14);
  EXPECT_EQ(runs_that_fit(h200, 1, 10), kMostRunsAtOnce);  // a small run: capped
  EXPECT_EQ(runs_that_fit(h200, 1, 200000), 1);            // larger than the GPU: one, alone
  EXPECT_EQ(runs_that_fit(16384, 64, 100), 1);             // no room beside the contexts
  // Unknown (the CPU, a first run that did not train): one.
  EXPECT_EQ(runs_that_fit(std::nan(""), 1, 2000), 1);
  EXPECT_EQ(runs_that_fit(h200, 1, std::nan("")), 1);
  EXPECT_EQ(runs_that_fit(h200, 0, 2000), 1);
}

// Process r of a node trains on cuda:(r mod G): the most processes one GPU gets.
TEST(RunsAtOnce, ProcessesPerGpuRoundUp) {
  EXPECT_EQ(processes_per_gpu(8, 1), 8);
  EXPECT_EQ(processes_per_gpu(8, 4), 2);
  EXPECT_EQ(processes_per_gpu(5, 4), 2);  // cuda:0 has ranks 0 and 4
  EXPECT_EQ(processes_per_gpu(2, 4), 1);  // more GPUs than processes
  EXPECT_EQ(processes_per_gpu(3, 0), 3);  // no GPU counted: as one
}

// Which runs qualify for whole-step CUDA graphs, and why the others do not.
// A CUDA device here is only a name: nothing runs on it.
TEST(CudaGraphs, WhichRunsQualifyAndWhyTheOthersDoNot) {
  EXPECT_EQ(parse_cuda_graphs("auto"), CudaGraphs::automatic);
  EXPECT_EQ(to_string(parse_cuda_graphs("on")), "on");
  EXPECT_EQ(to_string(parse_cuda_graphs("off")), "off");
  EXPECT_THROW(parse_cuda_graphs("maybe"), ConfigError);
  const RunConfig c = base_config();
  const c10::Device cpu(c10::kCPU), gpu(c10::kCUDA, 0);
  EXPECT_EQ(why_not_graphed(c, gpu), "");
  EXPECT_TRUE(resolve_cuda_graphs(CudaGraphs::automatic, c, gpu));
  EXPECT_FALSE(resolve_cuda_graphs(CudaGraphs::off, c, gpu));
  EXPECT_NE(why_not_graphed(c, cpu).find("needs a CUDA device, and this run trains on the cpu"), std::string::npos);
  EXPECT_FALSE(resolve_cuda_graphs(CudaGraphs::automatic, c, cpu));
  try {
    resolve_cuda_graphs(CudaGraphs::on, c, cpu);
    ADD_FAILURE() << "on, on the CPU, was not refused";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--cuda_graphs: 'on' cannot apply: needs a CUDA device"), std::string::npos)
        << e.what();
  }
  // Every schedule: the updates read the rate on the device, which a replay reads too.
  for (const LrSchedule schedule : {LrSchedule::step, LrSchedule::cosine, LrSchedule::linear}) {
    RunConfig s = c;
    s.schedule = schedule;
    s.lr_milestones = {1};
    s.warmup_epochs = 0.5;
    EXPECT_EQ(why_not_graphed(s, gpu), "") << int(schedule);
  }
  RunConfig bf16 = c;
  bf16.precision = Precision::bf16;
  EXPECT_EQ(why_not_graphed(bf16, gpu).empty(), TORCH_VERSION_MAJOR >= 2) << why_not_graphed(bf16, gpu);

  // A Trainer asked for graphs on the CPU refuses; auto there steps eagerly.
  InProcessCommunicator comm(1);
  EXPECT_THROW(Trainer(c, tiny(), data(), comm, Execution{Parallelism::automatic, 0, 0, CudaGraphs::on}), ConfigError);
  const Trainer automatic(c, tiny(), data(), comm, Execution{Parallelism::automatic, 0, 0, CudaGraphs::automatic});
  EXPECT_FALSE(automatic.cuda_graphs());
  EXPECT_EQ(automatic.graph_captures(), 0);
}

// A step's parts: device work joins the last part until host work ends it,
// and an eager step runs them in the order they were given.
TEST(CudaGraphs, AStepsPartsRunInTheirOrderAndEndAtHostWork) {
  std::string order;
  StepParts one;
  one.on_device([&] { order += "a"; });
  one.on_device([&] { order += "b"; });
  EXPECT_EQ(one.size(), 1u);
  one.run_eagerly();
  one.run_host(0);  // a part without host work: nothing
  EXPECT_EQ(order, "ab");

  order.clear();
  StepParts spread;  // as a run over two processes: forward and backward, MPI, the updates, MPI
  spread.on_device([&] { order += "f"; });
  spread.on_host([&] { order += "M"; });
  spread.on_device([&] { order += "u"; });
  spread.on_host([&] { order += "N"; });
  spread.on_host([&] { order += "O"; });  // host work right after host work: a part with no device work
  spread.on_device([&] { order += "d"; });
  EXPECT_EQ(spread.size(), 4u);
  EXPECT_TRUE(spread.has_device_work(1));
  EXPECT_FALSE(spread.has_device_work(2));  // a graph would capture nothing: none is made
  spread.run_eagerly();
  EXPECT_EQ(order, "fMuNOd");
  order.clear();
  spread.run_device(1);
  spread.run_host(1);
  EXPECT_EQ(order, "uN");
  EXPECT_THROW(spread.run_device(4), std::out_of_range);
}
