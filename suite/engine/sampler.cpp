#include "dpstudy/sampler.hpp"

#include <algorithm>

#include "dpstudy/error.hpp"

namespace dpstudy {

namespace {
constexpr std::uint64_t kSamplerStream = 1ull << 32;  // apart from the data seed's streams
}

ShardSampler::ShardSampler(std::vector<std::int64_t> shard, std::uint64_t seed, int worker)
    : shard_(std::move(shard)), rng_(Rng::stream(seed, kSamplerStream + std::uint64_t(worker))) {
  if (shard_.empty()) throw Error("ShardSampler: worker " + std::to_string(worker) + " has an empty shard");
  position_ = shard_.size();  // the first call starts a pass
}

void ShardSampler::restore(const State& s) {
  if (s.order.size() != shard_.size() || s.position < 0 || std::size_t(s.position) > shard_.size() ||
      s.passes < 0) {
    throw Error("its sampler state does not fit the worker's shard of " + std::to_string(shard_.size()) +
                " samples");
  }
  // Passes reshuffle the shard in place, so a saved order is a permutation of
  // it; anything else would index past the data or train on other samples.
  std::vector<std::int64_t> saved = s.order, own = shard_;
  std::sort(saved.begin(), saved.end());
  std::sort(own.begin(), own.end());
  if (saved != own) throw Error("its sampler order is not an order of the worker's shard");
  shard_ = s.order;
  position_ = std::size_t(s.position);
  passes_ = s.passes;
  rng_ = Rng(s.rng);
}

void ShardSampler::next(std::int64_t* out, std::int64_t count) {
  for (std::int64_t i = 0; i < count; ++i) {
    if (position_ == shard_.size()) {
      rng_.shuffle(shard_);
      position_ = 0;
      ++passes_;
    }
    out[i] = shard_[position_++];
  }
}

}  // namespace dpstudy
