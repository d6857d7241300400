// A study's keys as the file and command line give them: axis lists, exclude
// rules, and the suggestions for a mistyped key.
#include <gtest/gtest.h>

#include "dpstudy/error.hpp"
#include "dpstudy/study.hpp"

using namespace dpstudy;

TEST(StudyKeys, AxisListsRefuseEmptyAndRepeatedValues) {
  EXPECT_EQ(split_axis("workers", " 1, 2 ,4", false), (std::vector<std::string>{"1", "2", "4"}));
  EXPECT_EQ(split_axis("hidden", "512,512 | 1024", true), (std::vector<std::string>{"512,512", "1024"}));
  EXPECT_THROW(split_axis("workers", "1,,2", false), ConfigError);
  // A repeated value would run once (one run id): `seeds = 1, 1` is one seed.
  EXPECT_THROW(split_axis("workers", "1, 2, 2", false), ConfigError);
  EXPECT_THROW(expand_seeds("1, 1"), ConfigError);
  EXPECT_THROW(split_axis("hidden", "512 | 512", true), ConfigError);
  EXPECT_EQ(expand_seeds("3"), (std::vector<std::string>{"1", "2", "3"}));
}

TEST(StudyKeys, ExcludeRulesMatchOnlyGivenValues) {
  const std::vector<std::string> keys = {"workers", "overlap", "momentum"};
  const auto rules = parse_exclude("workers=2 & overlap>0; workers=2,workers=4", keys);
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_EQ(to_string(rules[0]), "workers=2 & overlap>0");
  const RawValues a = {{"workers", "2"}, {"overlap", "0.5"}}, b = {{"workers", "2"}, {"overlap", "0"}};
  EXPECT_TRUE(matches(rules[0], a));
  EXPECT_FALSE(matches(rules[0], b));
  // "2,workers=4" is one text value, never a worker count.
  EXPECT_FALSE(matches(rules[1], a));
  // A key the combination does not give never matches, even at its default.
  EXPECT_FALSE(matches(parse_exclude("momentum=0.9", keys)[0], a));
  EXPECT_THROW(parse_exclude("wrkers=2", keys), ConfigError);
}

TEST(StudyKeys, SuggestionsOnlyForCloseKeys) {
  const std::vector<std::string> keys = {"workers", "lr", "sync_period", "batch_size"};
  EXPECT_EQ(closest_key("wrokers", keys), "workers");
  EXPECT_EQ(closest_key("batchsize", keys), "batch_size");
  EXPECT_EQ(closest_key("sync_perid", keys), "sync_period");
  EXPECT_EQ(closest_key("q", keys), "");  // it was 'lr' for any short key
  EXPECT_EQ(closest_key("momentum", keys), "");
  EXPECT_EQ(did_you_mean("wrokers", keys, "--", ""), "; did you mean --workers?");
  EXPECT_EQ(did_you_mean("zzz", keys, "'", "'"), "");
}
