// The one layer between dpstudy and the MPI C API: the session, the world, and
// the Communicator that places W logical workers on the P processes of a run.
// Every call is checked; a failure is an MpiError naming the rank, the host and
// the call. Built only with DPSTUDY_WITH_MPI.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dpstudy/communicator.hpp"
#include "dpstudy/error.hpp"

namespace dpstudy {

class MpiError : public Error {
 public:
  using Error::Error;
};

namespace mpi {

// True when the MPI library can read and write GPU memory (Open MPI's
// MPIX_Query_cuda_support); otherwise the GPU buffers of an exchange between
// processes go through host copies (MpiCommunicator::mean).
bool cuda_aware();

// Initialises MPI in its constructor (if launched_by_mpi(), runtime_info.hpp) and finalises it.
class Session {
 public:
  Session();
  ~Session();
  Session(const Session&) = delete;
  bool active() const { return active_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  // Processes on this node (MPI_Comm_split_type shared memory) and this one's index there.
  int local_size() const { return local_size_; }
  int local_rank() const { return local_rank_; }
  const std::string& host() const { return host_; }
  // Ends every process of the job with `code`, after printing `message` (never returns).
  [[noreturn]] void abort(const std::string& message, int code) const;
  // Broadcasts from world rank 0.
  void broadcast(std::vector<std::int64_t>& values) const;
  // The largest of the values the processes pass (MPI_MAX over the world).
  double max(double value) const;
  // Every process's `text`, by world rank, on every process.
  std::vector<std::string> all_gather(const std::string& text) const;

 private:
  bool active_ = false;
  int rank_ = 0, size_ = 1, local_size_ = 1, local_rank_ = 0;
  std::string host_;
};

// An MPI_Comm as its Fortran handle (MPI_Comm_c2f), so that mpi.h stays out of
// this header: MPI_Comm is a pointer in Open MPI and an int in MPICH, while a
// Fortran handle is an integer in every MPI.
using CommHandle = std::int64_t;

// A communicator over `ranks` (world ranks, ascending) for one run; only those
// processes may construct it (MPI_Comm_create_group, collective over them).
// `tag` must be unique among the groups created at the same time.
class RunGroup {
 public:
  RunGroup(const std::vector<int>& ranks, int tag);
  ~RunGroup();
  RunGroup(const RunGroup&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }
  CommHandle handle() const { return comm_; }
  // Broadcasts `value` from the group's first process.
  void broadcast(long long& value) const;

 private:
  CommHandle comm_ = 0;
  int rank_ = 0, size_ = 1;
};

}  // namespace mpi

// W logical workers on the P processes of a RunGroup, W / P contiguous ones on
// each. mean() follows the fixed pairwise tree of communicator.hpp: a tree sum of
// the process's own workers, then recursive halving across processes (P a
// power of two) and an all-gather; otherwise every worker's buffer is gathered
// and the same tree summed on one process, then broadcast. Bit for bit the
// in-process result.
class MpiCommunicator : public Communicator {
 public:
  MpiCommunicator(const mpi::RunGroup& group, int workers);
  ~MpiCommunicator() override;
  int world_workers() const override { return workers_; }
  int first_local_worker() const override { return first_; }
  int local_workers() const override { return local_; }
  void mean(const std::vector<at::Tensor>& local, int first, int count, at::Tensor& mean) override;
  bool mean_needs_host() const override { return true; }  // MPI's calls, after the device's work
  std::vector<double> all_workers(const std::vector<double>& local) override;
  int agree(int flags) override;

 private:
  void reduce_over(mpi::CommHandle comm, int ranks, int rank, const std::vector<at::Tensor>& local, int count,
                   at::Tensor& out, std::vector<at::Tensor>& scratch);
  mpi::CommHandle comm_;  // the run's communicator
  int workers_, procs_, rank_, first_, local_;
  std::vector<at::Tensor> scratch_;       // the tree's, on the buffers' device
  std::vector<at::Tensor> host_scratch_;  // an exchange's through host memory (MPI not CUDA-aware)
  at::Tensor exchange_;
  std::vector<std::pair<int, mpi::CommHandle>> group_comms_;  // (group size, sub-communicator)
};

}  // namespace dpstudy
