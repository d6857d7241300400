// Sparsity at initialisation: a fixed mask over the prunable weights (every
// parameter with more than one dimension: convolution and linear weights, not
// biases or batch-norm parameters). SNIP (Lee et al. 2019) scores each weight by
// its connection sensitivity |dL/dc| for a multiplicative mask c at c = 1, which
// is |g * w|, summed over mini-batches; random pruning scores at random. One
// global top-k keeps the (1 - sparsity) fraction with the highest scores.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <utility>
#include <vector>

#include "dpstudy/metrics.hpp"
#include "dpstudy/replica.hpp"

namespace dpstudy {

// 1 where a replica's flat parameter buffer holds a prunable weight, else 0.
at::Tensor prunable_positions(Replica& replica);

// SNIP scores, in the flat parameter layout: sum over the batches of |g * w|.
// Leaves the replica's gradients as they were (zero).
at::Tensor snip_scores(Replica& replica, const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& targets);

// Keeps the round((1 - sparsity) x prunable) highest-scoring prunable weights
// (ties to the lower index), and every weight that is not prunable.
at::Tensor top_k_mask(const at::Tensor& scores, const at::Tensor& prunable, double sparsity);

// Fraction of zeros in the mask over the prunable weights, overall and per parameter.
SparsityReport sparsity_of(Replica& replica, const at::Tensor& mask);

}  // namespace dpstudy
