#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "dpstudy/file_io.hpp"
#include "test_support.hpp"

using namespace dpstudy;
using namespace dpstudy::test;

namespace {

bool exists(const std::string& p) {
  struct stat st;
  return lstat(p.c_str(), &st) == 0;
}

}  // namespace

TEST(RemoveTree, RemovesNestedFoldersButNotWhatLinksPointTo) {
  ScratchDir outside, scratch;
  const std::string kept = outside.str() + "/kept.txt";
  std::ofstream(kept) << "stays";
  const std::string root = scratch.str() + "/study";
  write_bytes(root + "/runs/a/b/deep.bin", {1, 2, 3});
  write_bytes(root + "/index.h5", {4});
  ASSERT_EQ(symlink(kept.c_str(), (root + "/runs/link").c_str()), 0);
  ASSERT_EQ(symlink(outside.str().c_str(), (root + "/dirlink").c_str()), 0);

  remove_tree(root);
  EXPECT_FALSE(exists(root));
  EXPECT_TRUE(exists(kept));  // links are removed, never followed
  remove_tree(root);          // a missing folder is no error
  EXPECT_FALSE(exists(root));
}

TEST(ChecksumDifferences, NamesEachFileWhoseBytesOrDigestDiffer) {
  const std::string a = "mnist/train bytes=10 sha256=aaaaaaaaaaaaaaaa\nmnist/test bytes=5 sha256=bbbbbbbbbbbbbbbb\n";
  EXPECT_EQ(checksum_differences(a, a), "");
  EXPECT_EQ(checksum_differences(a, "mnist/test bytes=5 sha256=bbbbbbbbbbbbbbbb\nmnist/train bytes=10 "
                                    "sha256=aaaaaaaaaaaaaaaa\n"),
            "");  // the order of the lines does not matter
  EXPECT_EQ(checksum_differences(a, "mnist/train bytes=10 sha256=cccccccccccccccc\nmnist/test bytes=5 "
                                    "sha256=bbbbbbbbbbbbbbbb\n"),
            "mnist/train (sha256=aaaaaaaaaaaa... then, sha256=cccccccccccc... now)");
  // A file on one side only is named with "none".
  EXPECT_EQ(checksum_differences(a, "mnist/train bytes=10 sha256=aaaaaaaaaaaaaaaa\n"),
            "mnist/test (sha256=bbbbbbbbbbbb... then, none now)");
  EXPECT_EQ(checksum_differences("", a),
            "mnist/test (none then, sha256=bbbbbbbbbbbb... now), mnist/train (none then, sha256=aaaaaaaaaaaa... now)");
}
