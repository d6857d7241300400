// One worker's stream of training indices: reshuffled passes over its shard,
// seeded from (run seed, worker index) only, so that it does not depend on the
// process layout. A batch may span the end of one pass and the start of the next.
#pragma once

#include <cstdint>
#include <vector>

#include "dpstudy/rng.hpp"

namespace dpstudy {

class ShardSampler {
 public:
  ShardSampler(std::vector<std::int64_t> shard, std::uint64_t seed, int worker);
  // Writes the next `count` dataset indices to `out`.
  void next(std::int64_t* out, std::int64_t count);
  std::int64_t passes() const { return passes_; }
  const std::vector<std::int64_t>& shard() const { return shard_; }

  // Everything needed to continue the stream exactly (checkpoints).
  struct State {
    std::vector<std::int64_t> order;
    std::int64_t position = 0, passes = 0;
    std::uint64_t rng = 0;
  };
  State state() const { return {shard_, std::int64_t(position_), passes_, rng_.state()}; }
  void restore(const State& s);

 private:
  std::vector<std::int64_t> shard_;  // reshuffled in place at the start of each pass
  Rng rng_;
  std::size_t position_ = 0;
  std::int64_t passes_ = 0;
};

}  // namespace dpstudy
