// Averaging across logical workers. The reduction is a fixed pairwise tree over
// worker index, so that both implementations (in-process here, MPI in mpi.hpp) give
// the same bits: sum(lo, hi) = sum(lo, mid) + sum(mid, hi), mid = lo + (hi - lo) / 2,
// one worker being its own sum; the mean is that sum divided by the count.
// With P processes (P a power of two dividing W), each holding W / P contiguous
// workers, the top levels of this tree are exactly recursive halving over
// processes and the bottom levels each process's own workers.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace dpstudy {

class Communicator {
 public:
  virtual ~Communicator() = default;
  // Logical workers in the whole job, and the contiguous range hosted here.
  virtual int world_workers() const = 0;
  virtual int first_local_worker() const = 0;
  virtual int local_workers() const = 0;

  // `local[i]` is the buffer of worker first_local_worker() + i; all have the
  // same shape and dtype. Writes the mean over workers [first, first + count)
  // into `mean` (on every process hosting one of them). The range must be
  // aligned to the tree: a whole group of a hierarchical run, or the world.
  virtual void mean(const std::vector<at::Tensor>& local, int first, int count, at::Tensor& mean) = 0;
  // Whether mean() may wait for the device and call into the host (MPI): a
  // CUDA graph cannot hold such a call, so a step is cut around it.
  virtual bool mean_needs_host() const = 0;

  // One value per local worker in, one per worker of the job out (in worker
  // order): per-worker metrics, summed by the caller in a fixed order.
  virtual std::vector<double> all_workers(const std::vector<double>& local) = 0;

  // The bitwise OR of `flags` over the run's processes: a decision that a
  // process takes from its own clock or signals (a checkpoint, a stop), taken
  // by all of them at the same step.
  virtual int agree(int flags) = 0;
};

// All W workers in this process.
class InProcessCommunicator : public Communicator {
 public:
  explicit InProcessCommunicator(int workers) : workers_(workers) {}
  int world_workers() const override { return workers_; }
  int first_local_worker() const override { return 0; }
  int local_workers() const override { return workers_; }
  void mean(const std::vector<at::Tensor>& local, int first, int count, at::Tensor& mean) override;
  bool mean_needs_host() const override { return false; }  // the tree's kernels only
  std::vector<double> all_workers(const std::vector<double>& local) override { return local; }
  int agree(int flags) override { return flags; }

 private:
  int workers_;
  std::vector<at::Tensor> scratch_;  // one per tree level, reused across calls
};

// The tree sum of buffers[lo, hi) into `out`, with scratch tensors per level
// (grown on demand). The building block of every Communicator.
void tree_sum(const std::vector<at::Tensor>& buffers, int lo, int hi, at::Tensor& out,
              std::vector<at::Tensor>& scratch, int level = 0);

// sum /= count, as IEEE division on every device. LibTorch's CUDA kernel turns a
// division by a host scalar into a multiplication by its reciprocal, which
// differs from the CPU's division in the last bit unless count is a power of two;
// dividing by a tensor on the same device keeps the true division there too.
void divide_by_count(at::Tensor& sum, int count);

}  // namespace dpstudy
