// Metaparameter search: Sobol points as Boost's sequence gives them, ranges
// mapped on their scales, grid and random trials, and bad search input; run ids.
#include <gtest/gtest.h>

#include <cmath>

#include "dpstudy/error.hpp"
#include "dpstudy/study.hpp"

using namespace dpstudy;

TEST(Search, SobolPointsAreBoostsSequence) {
  SearchSpec s{"sobol", 4, 0, 1, {{"lr", 1e-4, 1}, {"momentum", 0.9, 0.9999}}};
  const auto u = search_points(s);
  ASSERT_EQ(u.size(), 4u);
  // The 2-D Sobol sequence (Joe-Kuo directions) after the origin.
  const double expected[4][2] = {{0.5, 0.5}, {0.75, 0.25}, {0.25, 0.75}, {0.375, 0.375}};
  for (int t = 0; t < 4; ++t) {
    EXPECT_DOUBLE_EQ(u[t][0], expected[t][0]);
    EXPECT_DOUBLE_EQ(u[t][1], expected[t][1]);
  }
  s.skip = 2;
  EXPECT_EQ(search_points(s)[0], u[2]);
  // Log scale for lr, log(1 - momentum) for momentum.
  const auto trials = search_trials(SearchSpec{"sobol", 1, 0, 1, {{"lr", 1e-4, 1}, {"momentum", 0.9, 0.9999}}});
  EXPECT_NEAR(std::stod(trials[0][0].second), 1e-2, 1e-15);
  EXPECT_NEAR(std::stod(trials[0][1].second), 1 - std::sqrt(0.1 * 1e-4), 1e-12);  // the geometric middle of 1 - m
  EXPECT_EQ(trials[0][0].first, "lr");
}

TEST(Search, GridAndRandom) {
  const auto grid = search_points(SearchSpec{"grid", 9, 0, 1, {{"lr", 0.01, 1}, {"weight_decay", 1e-5, 1e-3}}});
  ASSERT_EQ(grid.size(), 9u);
  EXPECT_DOUBLE_EQ(grid[0][0], 1.0 / 6);
  EXPECT_DOUBLE_EQ(grid[8][1], 5.0 / 6);
  const SearchSpec r{"random", 5, 0, 3, {{"lr", 0.01, 1}}};
  EXPECT_EQ(search_points(r), search_points(r));
  SearchSpec other = r;
  other.seed = 4;
  EXPECT_NE(search_points(r), search_points(other));
  const auto steps = search_trials(SearchSpec{"grid", 2, 0, 1, {{"lr_decay_steps", 100, 200}}});
  EXPECT_EQ(steps[0][0].second, "125");
  EXPECT_EQ(steps[1][0].second, "175");
}

TEST(Search, BadInput) {
  auto error_of = [](const RawValues& v) -> std::string {
    try {
      parse_search(v);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(error_of({{"search", "sobol"}, {"trials", "8"}}),
            "--search: 'sobol' has an empty search space: give at least one search_<key> = LOW:HIGH");
  EXPECT_EQ(error_of({{"search", "bayes"}}), "--search: 'bayes' is not one of: sobol, random, grid");
  EXPECT_EQ(error_of({{"search", "sobol"}, {"trials", "8"}, {"search_lr", "1:0.1"}}),
            "--search_lr: '1:0.1' must be a range LOW:HIGH with LOW < HIGH and LOW > 0 (log scale)");
  EXPECT_EQ(error_of({{"search", "sobol"}, {"trials", "8"}, {"search_lr", "0.1"}}),
            "--search_lr: '0.1' must be a range LOW:HIGH, e.g. 1e-4:1");
  EXPECT_EQ(error_of({{"search", "sobol"}, {"search_lr", "0.1:1"}}),
            "--trials: '' is not set: give the number of trials per combination");
  EXPECT_EQ(error_of({{"search_lr", "0.1:1"}}), "--search: '' is not set: give search = sobol, random or grid");
  EXPECT_EQ(error_of({{"search", "sobol"}, {"trials", "2"}, {"search_momentum", "0.9:1"}}),
            "--search_momentum: '0.9:1' must be a range LOW:HIGH with LOW < HIGH within [0, 1)");
  // search_stop: a rule of the search, so it needs a search, and trials to beat one another.
  const RawValues space = {{"search", "sobol"}, {"trials", "2"}, {"search_lr", "0.1:1"}};
  auto with = [&space](RawValues more) {
    more.insert(more.begin(), space.begin(), space.end());
    return more;
  };
  EXPECT_TRUE(parse_search(with({{"search_stop", "beaten"}})).stop_beaten);
  EXPECT_FALSE(parse_search(with({{"search_stop", "none"}})).stop_beaten);
  EXPECT_FALSE(parse_search(space).stop_beaten);
  EXPECT_EQ(error_of(with({{"search_stop", "early"}})), "--search_stop: 'early' is not one of: none, beaten");
  EXPECT_EQ(error_of({{"search_stop", "beaten"}}), "--search: '' is not set: give search = sobol, random or grid");
  EXPECT_EQ(error_of({{"search", "sobol"}, {"trials", "1"}, {"search_lr", "0.1:1"}, {"search_stop", "beaten"}}),
            "--search_stop: 'beaten' needs trials >= 2: a trial is beaten by another trial of its combination");
}

// Keys added after the first release leave run ids (and checkpoints) as they
// were while they hold the old behaviour's value: results made before keep their ids.
TEST(RunIds, KeysAddedLaterChangeNoIdAtTheirOldDefault) {
  const KeyValues before = {{"workers", std::int64_t(4)}, {"eval_every", std::int64_t(0)}};
  KeyValues now = before;
  now.emplace_back("eval_at_sync", std::int64_t(0));
  now.emplace_back("test_every", std::int64_t(0));
  now.emplace_back("eval_growth", 0.0);
  now.emplace_back("max_steps", std::int64_t(0));
  EXPECT_EQ(run_id("mlp-mnist", now), run_id("mlp-mnist", before));
  now.back().second = std::int64_t(10000);
  EXPECT_NE(run_id("mlp-mnist", now), run_id("mlp-mnist", before));
  now.pop_back();
  now.back().second = 0.05;
  EXPECT_NE(run_id("mlp-mnist", now), run_id("mlp-mnist", before));
  now.pop_back();
  now.back().second = std::int64_t(5);
  EXPECT_NE(run_id("mlp-mnist", now), run_id("mlp-mnist", before));
  now.back().second = std::int64_t(0);
  now[2].second = std::int64_t(1);
  EXPECT_NE(run_id("mlp-mnist", now), run_id("mlp-mnist", before));
}
