// Data assignment properties over many combinations of its options.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "dpstudy/assignment.hpp"
#include "dpstudy/error.hpp"
#include "dpstudy/rng.hpp"

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

// A pool shared by all owners is a uniformly random sample, whatever the order:
// with label-sorted data and coarse parts, every class is in the pool at its
// global share, not the first classes of the order (scheme 2).
TEST(Assignment, APoolOfLabelSortedDataHoldsEveryClassAtItsShare) {
  const std::int64_t n = 20000;
  const auto labels = labels_of(n);
  const AssignmentSpec s{10, 0.5, OverlapMode::pool, Granularity::coarse, 16, DataOrder::label, 3};
  const auto shards = assign_shards(n, labels.data(), s);
  std::vector<std::int64_t> in_all(std::size_t(n), 0);
  for (const auto& shard : shards) {
    for (auto i : shard) ++in_all[std::size_t(i)];
  }
  std::vector<std::int64_t> pool_classes(10, 0);
  std::int64_t pool = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    if (in_all[std::size_t(i)] == 10) ++pool_classes[std::size_t(labels[std::size_t(i)])], ++pool;
  }
  EXPECT_EQ(pool, n / 2);
  for (std::int64_t c = 0; c < 10; ++c) {  // 1,000 expected; a binomial's sd is about 30
    EXPECT_NEAR(double(pool_classes[std::size_t(c)]), 1000.0, 150.0) << "class " << c;
  }
  // The rest is cut in the order: each owner adds 1,000 samples of one class.
  for (const auto& shard : shards) {
    ASSERT_EQ(shard.size(), std::size_t(n / 2 + n / 20));
    std::vector<std::int64_t> count(10, 0);
    for (auto i : shard) ++count[std::size_t(labels[std::size_t(i)])];
    // About 1,000 from the pool and most of its 1,000 from one class: the rest's classes
    // are runs of about 1,000 that need not line up with the parts.
    EXPECT_GT(*std::max_element(count.begin(), count.end()), 1500);
  }
  // The same seed, the same draw; one owner's shard is the whole order at any alpha.
  EXPECT_EQ(assign_shards(n, labels.data(), s), shards);
  const AssignmentSpec one{1, 0.5, OverlapMode::pool, Granularity::coarse, 16, DataOrder::label, 3};
  AssignmentSpec none = one;
  none.overlap = 0;
  EXPECT_EQ(assign_shards(n, labels.data(), one), assign_shards(n, labels.data(), none));
}

// The skew figure: the mean total-variation distance of each shard's class mix
// from the training set's, with the count matrix it comes from.
TEST(Assignment, ClassSkewMeasuresTheLabelSkewAchieved) {
  const std::int64_t n = 20000;
  const auto labels = labels_of(n);  // 10 balanced classes
  const auto skew = [&](const AssignmentSpec& s) {
    const auto st = assignment_stats(n, assign_shards(n, labels.data(), s), labels.data());
    EXPECT_EQ(st.classes, 10);
    EXPECT_EQ(st.class_counts.size(), std::size_t(s.owners) * 10u);
    std::int64_t total = 0;
    for (auto c : st.class_counts) total += c;
    const auto sizes = assign_shards(n, labels.data(), s);
    std::int64_t samples = 0;
    for (const auto& shard : sizes) samples += std::int64_t(shard.size());
    EXPECT_EQ(total, samples);  // every sample of every shard counted once
    return st.class_skew;
  };
  // IID: fine units of a shuffled order; 2,000 samples a shard leave only sampling noise.
  EXPECT_LT(skew({10, 0.0, OverlapMode::pool, Granularity::fine, 16, DataOrder::shuffled, 3}), 0.05);
  // Coarse label order, one class per owner: 0.5 (0.9 + 9 x 0.1) = 0.9 exactly.
  EXPECT_NEAR(skew({10, 0.0, OverlapMode::pool, Granularity::coarse, 16, DataOrder::label, 3}), 0.9, 1e-9);
  // Dirichlet: strong skew at alpha 0.1, little at 1000.
  AssignmentSpec d{10, 0.0, OverlapMode::pool, Granularity::fine, 16, DataOrder::shuffled, 3, 0.1};
  EXPECT_GT(skew(d), 0.5);
  d.dirichlet_alpha = 1000;
  EXPECT_LT(skew(d), 0.05);
  // Coarse label order with a random pool of half the data: each shard is that
  // pool plus 1,000 samples of one class, its own class at 0.1 / 0.55 against 0.1:
  // 0.5 (0.0818 + 9 x 0.0091) = 0.0818, up to the pool's sampling noise.
  EXPECT_NEAR(skew({10, 0.5, OverlapMode::pool, Granularity::coarse, 16, DataOrder::label, 3}), 0.0818, 0.01);
  // Without labels no counts are made.
  const auto bare = assignment_stats(
      n, assign_shards(n, labels.data(), {2, 0.0, OverlapMode::pool, Granularity::fine, 16, DataOrder::shuffled, 3}));
  EXPECT_EQ(bare.classes, 0);
  EXPECT_TRUE(bare.class_counts.empty());
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

namespace {

// How many of each class shard u holds.
std::vector<std::vector<std::int64_t>> class_counts(const std::vector<std::vector<std::int64_t>>& shards,
                                                    const std::vector<std::int64_t>& labels) {
  std::vector<std::vector<std::int64_t>> counts(shards.size(), std::vector<std::int64_t>(10, 0));
  for (std::size_t u = 0; u < shards.size(); ++u) {
    for (std::int64_t p : shards[u]) ++counts[u][std::size_t(labels[std::size_t(p)])];
  }
  return counts;
}

}  // namespace

TEST(Assignment, DirichletLabelSkewDealsEachClassInDrawnProportions) {
  const std::int64_t n = 6000;
  const auto labels = labels_of(n);  // 600 of each of 10 classes
  auto spec = [](double concentration, double overlap, OverlapMode mode, std::uint64_t seed) {
    AssignmentSpec s{8, overlap, mode, Granularity::fine, 16, DataOrder::shuffled, seed};
    s.dirichlet_alpha = concentration;
    return s;
  };
  // Disjoint, covering, non-empty; every class split exactly among the owners.
  for (double concentration : {0.05, 0.5, 5.0, 1e4}) {
    const auto shards = assign_shards(n, labels.data(), spec(concentration, 0, OverlapMode::pool, 3));
    const AssignmentStats st = assignment_stats(n, shards);
    EXPECT_EQ(st.covered, n) << concentration;
    EXPECT_EQ(st.mean_intersection, 0) << concentration;
    EXPECT_GT(st.min_size, 0) << concentration;
    const auto counts = class_counts(shards, labels);
    for (std::size_t k = 0; k < 10; ++k) {
      std::int64_t total = 0;
      for (const auto& c : counts) total += c[k];
      EXPECT_EQ(total, 600) << concentration;
    }
  }
  // Small alpha: an owner holds few classes; large: every owner about 600 / 8 = 75 of each.
  auto classes_held = [&](double concentration) {  // mean over owners of classes with >= 5 % of its shard
    const auto shards = assign_shards(n, labels.data(), spec(concentration, 0, OverlapMode::pool, 3));
    const auto counts = class_counts(shards, labels);
    double held = 0;
    for (std::size_t u = 0; u < counts.size(); ++u) {
      for (std::int64_t c : counts[u]) held += double(c) >= 0.05 * double(shards[u].size());
    }
    return held / double(counts.size());
  };
  EXPECT_LT(classes_held(0.05), 3.0);
  EXPECT_EQ(classes_held(1e4), 10.0);
  const auto iid = class_counts(assign_shards(n, labels.data(), spec(1e4, 0, OverlapMode::pool, 3)), labels);
  for (const auto& c : iid) {
    for (std::int64_t k : c) EXPECT_NEAR(double(k), 75.0, 5.0);
  }
  // Seeded: the same seed gives the same shards, another seed others.
  EXPECT_EQ(assign_shards(n, labels.data(), spec(0.5, 0, OverlapMode::pool, 3)),
            assign_shards(n, labels.data(), spec(0.5, 0, OverlapMode::pool, 3)));
  EXPECT_NE(assign_shards(n, labels.data(), spec(0.5, 0, OverlapMode::pool, 3)),
            assign_shards(n, labels.data(), spec(0.5, 0, OverlapMode::pool, 4)));
  // Overlap on top: pool shares round(alpha N) samples with every owner; spread
  // adds a draw of alpha of what each owner lacks.
  const auto pool = assign_shards(n, labels.data(), spec(0.5, 0.25, OverlapMode::pool, 3));
  EXPECT_NEAR(assignment_stats(n, pool).mean_overlap_fraction, 0.25, 1e-9);
  const auto disjoint = assign_shards(n, labels.data(), spec(0.5, 0, OverlapMode::spread, 3));
  const auto spread = assign_shards(n, labels.data(), spec(0.5, 0.5, OverlapMode::spread, 3));
  EXPECT_EQ(assignment_stats(n, spread).covered, n);
  for (std::size_t u = 0; u < spread.size(); ++u) {
    const double lacks = double(n) - double(disjoint[u].size());
    EXPECT_NEAR(double(spread[u].size()), double(disjoint[u].size()) + 0.5 * lacks, 1.0) << u;
  }
  // More owners than a skew this strong can feed: a message, not an empty shard.
  AssignmentSpec starved = spec(1e-4, 0, OverlapMode::pool, 3);
  starved.owners = 64;
  try {
    assign_shards(n, labels.data(), starved);
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--dirichlet_alpha: '0.0001' left a shard owner without samples"),
              std::string::npos)
        << e.what();
  }
}

// The Dirichlet draws come from Gamma(alpha) variates of the project's own
// generator (std:: distributions differ between standard libraries).
TEST(Assignment, GammaVariatesHaveTheirMeanAndVariance) {
  for (double shape : {0.05, 0.5, 1.0, 3.7}) {
    Rng rng = Rng::stream(11, 7);
    const int n = 200000;
    double sum = 0, sum2 = 0;
    for (int i = 0; i < n; ++i) {
      const double x = rng.gamma(shape);
      ASSERT_GE(x, 0.0);
      sum += x;
      sum2 += x * x;
    }
    const double mean = sum / n, var = sum2 / n - mean * mean;
    EXPECT_NEAR(mean, shape, 0.02 * shape + 0.002) << shape;  // Gamma(k, 1): mean k, variance k
    EXPECT_NEAR(var, shape, 0.06 * shape + 0.002) << shape;
  }
}
