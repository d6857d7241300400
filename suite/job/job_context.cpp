// The parts of a job that its steps share (job_context.hpp), apart from the
// engine's entry (workload_main.cpp), which calls the workload's model.cpp:
// a program that links the library without a workload (a consumer of the
// install tree, a test) never pulls that entry in through these.
#include "job_context.hpp"

#include <ATen/Context.h>
#include <ATen/Parallel.h>

#include <cstdio>
#include <memory>

#include "dpstudy/build_info.hpp"
#include "dpstudy/error.hpp"
#include "dpstudy/runtime_info.hpp"

namespace dpstudy {

RunComm::RunComm(const std::vector<int>& ranks, int workers, int tag) {
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

void print_header(const Job& job) {
  const BuildInfo b = build_info();
  const BlasInfo blas = blas_info();
  std::printf("# %s, dpstudy %s (commit %s), LibTorch %s\n", job.prog.c_str(), b.version.c_str(),
              commit_line(b).c_str(), torch_version().c_str());
  std::printf("# BLAS: %s, %s (%s); CPU kernels %s; intra-op threads %d; parallel %s; deterministic algorithms %s\n",
              blas.kind.c_str(), blas.library.c_str(), blas.build.c_str(), job.cpu_kernels.c_str(),
              at::get_num_threads(), job.request.options.parallel.c_str(),
              at::globalContext().deterministicAlgorithms() ? "on" : "off");
  if (job.device.is_cuda()) {
    std::printf("# GPU: %s (%s; its driver: CUDA %s)\n", job.gpu.c_str(), job.device.str().c_str(),
                job.gpu_driver.c_str());
  }
  if (blas.slow) std::printf("# WARNING: the reference BLAS is active; training runs about 15x slower\n");
}

}  // namespace dpstudy
