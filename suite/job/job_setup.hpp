// The steps of a job's start that workload_main.cpp takes in turn: the
// machine's part (device, threads, determinism, what computes) and the checks
// of the planned runs and their data before any run trains.
#pragma once

#include <string>

#include "job_context.hpp"

namespace dpstudy {

// job_machine.cpp

// cpu, or the GPU of this process's local rank when there is one (auto) or
// when asked (cuda, or a reproduction of a GPU run; an error without one).
at::Device resolve_device(const JobOptions& g, const StoredRun& stored, int local_rank);
// The CPU kernels LibTorch's own code picked: "ATen AVX2, oneDNN 2.6.3 avx512_core_bf16"; "-" where none says.
std::string cpu_kernels();
// "none" on the CPU; on a GPU, the device and the versions of the libraries
// that compute, as provenance records them. `driver`: the CUDA version the driver supports.
std::string gpu_identity(const at::Device& device, bool deterministic, std::string* driver);
// Threads per process (--threads, a reproduction's reference, or the cores it
// may use) and how it uses them (--parallel); sets g.threads to the count.
void set_threads(JobOptions& g, const StoredRun& stored, const Session& session);
// Deterministic algorithms, cuBLAS's workspace and cuDNN's choices fixed.
void set_deterministic(const at::Device& device);

// job_checks.cpp

// Data, once per dataset; then every run's cost, and W b <= N, before anything runs.
void load_data(Job& job);
// Every process's data files are rank 0's, or the job ends. A collective.
void check_same_data(const Job& job);
// Every run's processes can host its workers.
void check_placement(const Request& request, const Plan& plan, int world);
// --runs_at_once resolved for this process: N, or 0 for auto on a GPU.
int resolve_runs_at_once(const Request& request, const Plan& plan, const at::Device& device, int world, JobOptions& g);
// --cuda_graphs on for a run that cannot be graphed: refused with the reason.
void check_cuda_graphs(const Request& request, const Plan& plan, const at::Device& device);
// --memory_format channels_last for a model without convolutions: refused.
void check_memory_formats(const Request& request, const Plan& plan);

}  // namespace dpstudy
