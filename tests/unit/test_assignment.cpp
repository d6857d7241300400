// Data assignment properties over many combinations of its options.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "dpstudy/assignment.hpp"
#include "dpstudy/error.hpp"

using namespace dpstudy;

namespace {

std::vector<std::int64_t> labels_of(std::int64_t n) {
  std::vector<std::int64_t> l(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) l[std::size_t(i)] = (i * 7) % 10;
  return l;
}

}  // namespace

TEST(Assignment, PropertiesHoldOverManyCombinations) {
  int checked = 0;
  for (std::int64_t n : {97, 1000, 4096}) {
    const auto labels = labels_of(n);
    for (int owners : {1, 2, 3, 8}) {
      for (double alpha : {0.0, 0.1, 0.25, 0.5, 0.9, 1.0}) {
        for (OverlapMode mode : {OverlapMode::pool, OverlapMode::spread}) {
          for (Granularity g : {Granularity::fine, Granularity::medium, Granularity::coarse}) {
            for (DataOrder order : {DataOrder::shuffled, DataOrder::stored, DataOrder::label}) {
              const AssignmentSpec s{owners, alpha, mode, g, 16, order, 5};
              const std::string what = "n=" + std::to_string(n) + " U=" + std::to_string(owners) +
                                       " alpha=" + std::to_string(alpha) + " " + to_string(mode) + " " +
                                       to_string(g) + " " + to_string(order);
              // Fewer medium blocks than owners may leave a shard empty: that is refused.
              const bool few_units = g == Granularity::medium && (n + 15) / 16 < owners;
              std::vector<std::vector<std::int64_t>> shards;
              try {
                shards = assign_shards(n, labels.data(), s);
              } catch (const ConfigError& e) {
                EXPECT_TRUE(few_units) << what << ": " << e.what();
                ++checked;
                continue;
              }
              ASSERT_EQ(shards.size(), std::size_t(owners)) << what;
              const AssignmentStats st = assignment_stats(n, shards);
              EXPECT_EQ(st.covered, n) << what;  // every sample in at least one shard
              for (const auto& shard : shards) {
                const std::set<std::int64_t> unique(shard.begin(), shard.end());
                ASSERT_EQ(unique.size(), shard.size()) << what << ": a sample twice in one shard";
                ASSERT_GE(*unique.begin(), 0);
                ASSERT_LT(*unique.rbegin(), n);
                // Shard size formulas (docs/engine.md), up to rounding to whole units:
                // pool: alpha N + (1 - alpha) N / U; spread: N / U + alpha (N - N / U).
                const double own = double(n) / owners;
                const double expected = mode == OverlapMode::pool ? alpha * n + (1 - alpha) * own
                                                                  : own + alpha * (n - own);
                const double slack = g == Granularity::fine ? 3.0 : g == Granularity::medium ? 64.0 : owners + 2.0;
                if (!few_units) {
                  EXPECT_NEAR(double(shard.size()), expected, slack) << what;
                }
              }
              if (alpha == 0.0) {
                EXPECT_EQ(st.mean_intersection, 0.0) << what << ": alpha 0 must be disjoint";
              }
              if (alpha == 1.0) {
                for (const auto& shard : shards) {
                  EXPECT_EQ(std::int64_t(shard.size()), n) << what << ": alpha 1 is full";
                }
              }
              if (mode == OverlapMode::pool && owners > 1 && g == Granularity::fine) {
                EXPECT_NEAR(st.mean_overlap_fraction, alpha, 1.0 / n) << what;
              }
              EXPECT_EQ(assign_shards(n, labels.data(), s), shards) << what << ": same seed, same shards";
              ++checked;
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, 3 * 4 * 6 * 2 * 3 * 3);
}

TEST(Assignment, SeedAndOrderChangeTheShards) {
  const auto labels = labels_of(1000);
  const AssignmentSpec a{4, 0.0, OverlapMode::pool, Granularity::fine, 16, DataOrder::shuffled, 1};
  AssignmentSpec b = a;
  b.seed = 2;
  EXPECT_NE(assign_shards(1000, labels.data(), a), assign_shards(1000, labels.data(), b));
}

TEST(Assignment, CoarseLabelOrderGivesNonIidShards) {
  const auto labels = labels_of(1000);
  const AssignmentSpec s{5, 0.0, OverlapMode::pool, Granularity::coarse, 16, DataOrder::label, 3};
  for (const auto& shard : assign_shards(1000, labels.data(), s)) {
    std::set<std::int64_t> classes;
    for (auto i : shard) classes.insert(labels[std::size_t(i)]);
    EXPECT_EQ(classes.size(), 2u);  // 10 classes of 100 cut into 5 contiguous runs of 200
  }
  // Fine units of the same label order are dealt at random: every class everywhere.
  const AssignmentSpec fine{5, 0.0, OverlapMode::pool, Granularity::fine, 16, DataOrder::label, 3};
  for (const auto& shard : assign_shards(1000, labels.data(), fine)) {
    std::set<std::int64_t> classes;
    for (auto i : shard) classes.insert(labels[std::size_t(i)]);
    EXPECT_EQ(classes.size(), 10u);
  }
}

TEST(Assignment, MediumBlocksAreContiguousRunsOfTheOrder) {
  const AssignmentSpec s{2, 0.0, OverlapMode::pool, Granularity::medium, 10, DataOrder::stored, 3};
  for (const auto& shard : assign_shards(100, nullptr, s)) {
    ASSERT_EQ(shard.size(), 50u);
    for (std::size_t i = 0; i < shard.size(); i += 10) {
      EXPECT_EQ(shard[i] % 10, 0);
      for (std::size_t j = 1; j < 10; ++j) EXPECT_EQ(shard[i + j], shard[i] + std::int64_t(j));
    }
  }
}

TEST(Assignment, TooFewUnitsForTheOwnersIsAConfigError) {
  const AssignmentSpec s{8, 0.0, OverlapMode::pool, Granularity::medium, 64, DataOrder::shuffled, 1};
  try {
    assign_shards(300, nullptr, s);  // 5 blocks for 8 owners
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--block_size: '64' leaves shard"), std::string::npos) << e.what();
  }
}
