#include <gtest/gtest.h>

#include <set>

#include "dpstudy/error.hpp"
#include "dpstudy/manifest.hpp"

using namespace dpstudy;

TEST(Manifest, BuiltinCoversEveryOfficialFile) {
  const Manifest& m = Manifest::builtin();
  EXPECT_EQ(m.entries().size(), 14u);
  std::set<std::string> datasets;
  for (const auto& e : m.entries()) {
    datasets.insert(e.dataset);
    EXPECT_FALSE(e.base_url.empty()) << e.file;
    EXPECT_TRUE(!e.sha256.empty() || !e.archive_md5.empty()) << e.dataset << " " << e.file
                                                             << " can be verified by neither digest";
  }
  EXPECT_EQ(datasets, (std::set<std::string>{"mnist", "fashion-mnist", "cifar10"}));
  const ManifestEntry* t10k = m.find("mnist", "t10k-images-idx3-ubyte");
  ASSERT_NE(t10k, nullptr);
  EXPECT_EQ(t10k->bytes, 7840016u);
  EXPECT_EQ(m.find("mnist", "no-such-file"), nullptr);
}

TEST(Manifest, ParseErrorsNameTheLine) {
  const auto error_of = [](const std::string& text) -> std::string {
    try {
      Manifest::parse(text, "m.tsv");
    } catch (const DataError& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(error_of("# comment\nmnist a 1 - a.gz -\n"),
            "m.tsv:2: expected 7 fields (dataset file bytes sha256 archive archive_md5 base_url), found 6");
  EXPECT_EQ(error_of("mnist a 12x - a.gz - http://h/\n"), "m.tsv:1: bytes '12x' is not a whole number");
  EXPECT_EQ(error_of("mnist a 1 ABC a.gz - http://h/\n"),
            "m.tsv:1: sha256 'ABC' is not 64 lowercase hex digits");
  EXPECT_EQ(error_of("mnist a 1 - a.gz 123 http://h/\n"),
            "m.tsv:1: archive_md5 '123' is not 32 lowercase hex digits");
}

TEST(Manifest, VerifyChecksSizeThenDigest) {
  const std::string sha(64, 'a');
  const Manifest m = Manifest::parse("d f 10 " + sha + " f.gz - -\nd g 10 - g.gz - -\n", "m.tsv");
  EXPECT_EQ(m.verify("d", {"/p/f", "f", 10, sha}), Manifest::Check::match);
  EXPECT_EQ(m.verify("d", {"/p/g", "g", 10, sha}), Manifest::Check::unrecorded);
  EXPECT_THROW(m.verify("d", {"/p/f", "f", 11, sha}), DataError);
  EXPECT_THROW(m.verify("d", {"/p/f", "f", 10, std::string(64, 'b')}), DataError);
  try {
    m.verify("e", {"/p/f", "f", 10, sha});
    FAIL();
  } catch (const DataError& e) {
    EXPECT_STREQ(e.what(), "/p/f: is not in m.tsv for dataset 'e'");
  }
}
