#include "dpstudy/pruning.hpp"

#include <ATen/ATen.h>

#include <cmath>

namespace dpstudy {

at::Tensor prunable_positions(Replica& replica) {
  at::Tensor out = at::zeros_like(replica.params());
  std::int64_t offset = 0;
  for (const auto& p : replica.model().parameters()) {
    if (p.dim() > 1) out.narrow(0, offset, p.numel()).fill_(1);
    offset += p.numel();
  }
  return out;
}

at::Tensor snip_scores(Replica& replica, const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& targets) {
  at::Tensor scores = at::zeros_like(replica.params());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    replica.backward(at::cross_entropy_loss(replica.model().forward(inputs[i]), targets[i]));
    scores.add_((replica.grads() * replica.params()).abs_());
  }
  replica.grads().zero_();
  return scores;
}

at::Tensor top_k_mask(const at::Tensor& scores, const at::Tensor& prunable, double sparsity) {
  const at::Tensor candidates = prunable.nonzero().squeeze(1);
  const std::int64_t n = candidates.numel();
  const std::int64_t keep = std::llround((1.0 - sparsity) * double(n));
  at::Tensor mask = at::ones_like(scores);
  mask.index_fill_(0, candidates, 0);
  if (keep > 0) {
    // A stable descending sort: equal scores keep the lower index first.
    const auto sorted = at::sort(scores.index_select(0, candidates), /*stable=*/true, /*dim=*/0, /*descending=*/true);
    const at::Tensor kept = candidates.index_select(0, std::get<1>(sorted).narrow(0, 0, keep));
    mask.index_fill_(0, kept, 1);
  }
  return mask;
}

SparsityReport sparsity_of(Replica& replica, const at::Tensor& mask) {
  SparsityReport r;
  std::int64_t offset = 0, zeros = 0, total = 0;
  for (const auto& item : replica.model().named_parameters()) {
    const at::Tensor& p = item.value();
    if (p.dim() > 1) {
      const std::int64_t z = p.numel() - mask.narrow(0, offset, p.numel()).sum().item<std::int64_t>();
      r.per_parameter.emplace_back(item.key(), double(z) / double(p.numel()));
      zeros += z;
      total += p.numel();
    }
    offset += p.numel();
  }
  r.overall = total ? double(zeros) / double(total) : 0;
  return r;
}

}  // namespace dpstudy
