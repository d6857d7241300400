#include "dpstudy/communicator.hpp"

#include <ATen/ATen.h>

#include "dpstudy/error.hpp"

namespace dpstudy {

void tree_sum(const std::vector<at::Tensor>& buffers, int lo, int hi, at::Tensor& out,
              std::vector<at::Tensor>& scratch, int level) {
  if (hi - lo == 1) {
    out.copy_(buffers[std::size_t(lo)]);
    return;
  }
  if (hi - lo == 2) {  // lower + upper in one pass, not two copies and an add: the same bits
    at::add_out(out, buffers[std::size_t(lo)], buffers[std::size_t(lo) + 1]);
    return;
  }
  // Sized once: deeper calls must not reallocate the vector under `upper`.
  if (scratch.size() < 32) scratch.resize(32);  // depth < 32 for any int count
  const int mid = lo + (hi - lo) / 2;
  tree_sum(buffers, lo, mid, out, scratch, level + 1);
  at::Tensor& upper = scratch[std::size_t(level)];
  if (!upper.defined() || !upper.is_same_size(out) || upper.scalar_type() != out.scalar_type() ||
      upper.device() != out.device()) {
    upper = at::empty_like(out);
  }
  tree_sum(buffers, mid, hi, upper, scratch, level + 1);
  out.add_(upper);  // lower + upper
}

void divide_by_count(at::Tensor& sum, int count) {
  if (sum.is_cpu()) {
    sum.div_(double(count));
  } else {
    sum.div_(at::scalar_tensor(double(count), sum.options()));
  }
}

void InProcessCommunicator::mean(const std::vector<at::Tensor>& local, int first, int count, at::Tensor& mean) {
  if (count < 1 || first < 0 || first + count > workers_ || int(local.size()) != workers_) {
    throw Error("InProcessCommunicator::mean: range [" + std::to_string(first) + ", " +
                std::to_string(first + count) + ") does not fit " + std::to_string(workers_) + " workers");
  }
  tree_sum(local, first, first + count, mean, scratch_);
  divide_by_count(mean, count);
}

}  // namespace dpstudy
