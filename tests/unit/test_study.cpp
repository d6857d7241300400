// A study's keys as the file and command line give them: axis lists, exclude
// rules, and the suggestions for a mistyped key.
#include <gtest/gtest.h>

#include <fstream>

#include "dpstudy/error.hpp"
#include "dpstudy/sha256.hpp"
#include "dpstudy/study.hpp"
#include "test_support.hpp"

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

TEST(StudyFile, WindowsLineEndsAndByteOrderMarkReadAsPlainText) {
  // Files saved by editors on Windows: CRLF line ends, and a UTF-8 byte order mark
  // that the INI reader took for part of the first line ("invalid line '[study]'").
  test::ScratchDir dir;
  const std::vector<std::string> known = {"name", "workers", "lr"};
  const auto read = [&](const std::string& bytes) {
    const std::string path = dir.str() + "/study.ini";
    std::ofstream(path, std::ios::binary) << bytes;
    std::string text;
    RawValues values = read_study_file(path, known, &text, "mlp-mnist");
    return std::make_pair(values, text);
  };
  const auto plain = read("[study]\nname = s\n[sweep]\nworkers = 1, 2\nlr = 0.05\n");
  ASSERT_FALSE(plain.first.empty());
  EXPECT_EQ(read("[study]\r\nname = s\r\n[sweep]\r\nworkers = 1, 2\r\nlr = 0.05\r\n").first, plain.first);
  const auto bom = read("\xEF\xBB\xBF[study]\nname = s\n[sweep]\nworkers = 1, 2\nlr = 0.05\n");
  EXPECT_EQ(bom.first, plain.first);
  EXPECT_EQ(bom.second, plain.second);  // the text stored in run files, for --reproduce
}

// Only configs whose shards the random pool changes (coarse, pool, overlap > 0,
// several shard owners) get new run ids; every other id stays as it was.
TEST(RunIds, OnlyConfigsWhosePoolIsDrawnAnewGetNewIds) {
  const auto id_text = [](const RunConfig& c) {
    std::string text = "workload=w\n";
    for (const auto& [k, v] : c.key_values()) {
      if (!added_later_at_old_default(k, v)) text += k + "=" + to_text(v) + "\n";
    }
    return text;
  };
  RunConfig c;
  c.workers = 4;
  c.granularity = Granularity::coarse;
  c.overlap = 0.5;
  EXPECT_TRUE(pool_drawn_anew(c.key_values()));
  const std::string old_id = Sha256::of(id_text(c).data(), id_text(c).size()).substr(0, 16);
  EXPECT_NE(run_id("w", c.key_values()), old_id);
  for (auto change : {0, 1, 2, 3, 4}) {
    RunConfig d = c;
    if (change == 0) d.overlap = 0;
    if (change == 1) d.overlap_mode = OverlapMode::spread;
    if (change == 2) d.granularity = Granularity::fine;
    if (change == 3) d.workers = 1;
    if (change == 4) d.group_size = 4, d.shard_owner = ShardOwner::group;
    EXPECT_FALSE(pool_drawn_anew(d.key_values())) << change;
    const std::string text = id_text(d);
    EXPECT_EQ(run_id("w", d.key_values()), Sha256::of(text.data(), text.size()).substr(0, 16)) << change;
  }
}
