// Data assignment: which training samples each shard owner (a worker, or a
// group of workers) may draw from. Definitions and formulas: docs/engine.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dpstudy/run_config.hpp"

namespace dpstudy {

// The assignment scheme run files record (/assignment@scheme). 2: the pool is a
// uniformly random sample in every granularity. Files without the attribute are
// scheme 1, whose coarse pool was the first alpha of the order.
inline constexpr int kAssignmentScheme = 2;

struct AssignmentSpec {
  int owners = 1;  // U: workers, or workers / group_size
  double overlap = 0.0;
  OverlapMode mode = OverlapMode::pool;
  Granularity granularity = Granularity::fine;
  std::int64_t block_size = 64;
  DataOrder order = DataOrder::shuffled;
  std::uint64_t seed = 1;  // the data seed
  double dirichlet_alpha = 0.0;  // > 0: label skew (fine units; docs/engine.md)
};

AssignmentSpec assignment_spec(const RunConfig& config);

// Shards over positions 0..n-1 of the training set. `labels` (n values) is
// needed for DataOrder::label and dirichlet_alpha > 0 only. Every position is
// in at least one shard and no shard is empty; otherwise ConfigError (too few
// samples or blocks for the owners). In pool mode the shared fraction is a
// uniformly random sample drawn with the data seed, whatever the order.
std::vector<std::vector<std::int64_t>> assign_shards(std::int64_t n, const std::int64_t* labels,
                                                     const AssignmentSpec& spec);

struct AssignmentStats {
  std::int64_t min_size = 0, max_size = 0;
  double mean_size = 0;
  std::int64_t covered = 0;          // positions in at least one shard
  double mean_intersection = 0;      // mean over owner pairs of |S_u ∩ S_v|, samples
  double mean_overlap_fraction = 0;  // the same divided by n (equals alpha in pool mode)
  // Label skew achieved: samples of each class in each shard (owners x classes,
  // row-major), and the mean over shards of the total-variation distance between
  // the shard's class distribution and the training set's (0: every shard has the
  // global mix; 1 - 1/C: each shard one class of C balanced ones).
  std::int64_t classes = 0;
  std::vector<std::int64_t> class_counts;
  double class_skew = 0;
};

// `labels` (n values, classes 0..C-1) fills the class counts and the skew; null leaves them empty.
AssignmentStats assignment_stats(std::int64_t n, const std::vector<std::vector<std::int64_t>>& shards,
                                 const std::int64_t* labels = nullptr);

}  // namespace dpstudy
