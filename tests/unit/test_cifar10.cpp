// CIFAR-10 binary reading: the record layout, fixtures, and bad input.
#include <gtest/gtest.h>

#include <algorithm>

#include "dpstudy/cifar10.hpp"
#include "dpstudy/dataset.hpp"
#include "dpstudy/error.hpp"
#include "dpstudy/fixtures.hpp"
#include "test_support.hpp"

using namespace dpstudy;
using dpstudy::test::ScratchDir;
using dpstudy::test::write_bytes;

namespace {

// Pixel value at (channel, row, column) of record r, distinct enough to catch
// a swapped plane or a transposed image.
std::uint8_t pattern(int r, int c, int y, int x) { return std::uint8_t((r * 7 + c * 85 + y * 3 + x) % 256); }

std::vector<std::uint8_t> records(int n, int first_label = 0) {
  std::vector<std::uint8_t> out;
  for (int r = 0; r < n; ++r) {
    out.push_back(std::uint8_t((first_label + r) % 10));
    for (int c = 0; c < 3; ++c)
      for (int y = 0; y < 32; ++y)
        for (int x = 0; x < 32; ++x) out.push_back(pattern(r, c, y, x));
  }
  return out;
}

std::string expect_error(const std::string& path) {
  try {
    read_cifar10_batch(path);
  } catch (const DataError& e) {
    EXPECT_EQ(e.path(), path);
    return e.what();
  }
  ADD_FAILURE() << "no error for " << path;
  return {};
}

}  // namespace

TEST(Cifar10, RecordLayoutIsLabelThenRedGreenBluePlanesRowMajor) {
  ScratchDir dir;
  const auto path = (dir.path() / "batch.bin").string();
  write_bytes(path, records(4, 3));
  const CifarBatch b = read_cifar10_batch(path);
  ASSERT_EQ(b.images.size(), 4u * 3 * 32 * 32);  // [N, 3, 32, 32]
  EXPECT_EQ(b.labels, (std::vector<std::int64_t>{3, 4, 5, 6}));
  auto px = [&b](int r, int c, int y, int x) { return b.images[std::size_t(((r * 3 + c) * 32 + y) * 32 + x)]; };
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 3; ++c)
      for (int y : {0, 1, 17, 31})
        for (int x : {0, 2, 30, 31}) ASSERT_EQ(px(r, c, y, x), pattern(r, c, y, x)) << r << c << y << x;
  EXPECT_EQ(b.file.bytes, 4u * 3073);
  EXPECT_EQ(b.file.name, "batch.bin");
}

TEST(Cifar10, FixturesLoadAsNamedDataset) {
  test::ScopedEnv no_env("DPSTUDY_DATA_DIR", nullptr);
  ScratchDir dir;
  write_fixtures(dir.str(), {603, 40, 5, true});
  const Dataset train = load_dataset("cifar10", Split::train, {dir.str()});
  EXPECT_EQ(train.size(), 603);
  EXPECT_EQ(train.images.size(), 603u * 3 * 32 * 32);
  EXPECT_EQ(train.files.size(), 5u);
  EXPECT_EQ(train.files[0].bytes, 121u * 3073);  // 603 = 121 + 121 + 121 + 120 + 120
  EXPECT_EQ(train.files[4].bytes, 120u * 3073);
  const Dataset test = load_dataset("cifar10", Split::test, {dir.str()});
  EXPECT_EQ(test.size(), 40);
  EXPECT_EQ(*std::max_element(test.labels.begin(), test.labels.end()), 9);
  EXPECT_EQ(*std::min_element(test.labels.begin(), test.labels.end()), 0);
}

TEST(Cifar10, SizeNotAWholeNumberOfRecords) {
  ScratchDir dir;
  const auto path = (dir.path() / "data_batch_1.bin").string();
  auto bytes = records(3);
  bytes.resize(bytes.size() - 100);
  write_bytes(path, bytes);
  const std::string what = expect_error(path);
  EXPECT_NE(what.find("9119 bytes is not a whole number of 3073-byte CIFAR-10 records"), std::string::npos)
      << what;
}

TEST(Cifar10, EmptyFile) {
  ScratchDir dir;
  const auto path = (dir.path() / "test_batch.bin").string();
  write_bytes(path, {});
  EXPECT_NE(expect_error(path).find("is empty"), std::string::npos);
}

TEST(Cifar10, LabelOutOfRange) {
  ScratchDir dir;
  const auto path = (dir.path() / "test_batch.bin").string();
  auto bytes = records(3);
  bytes[2 * 3073] = 10;
  write_bytes(path, bytes);
  const std::string what = expect_error(path);
  EXPECT_NE(what.find("label 10 of record 2 is out of range, expected 0..9"), std::string::npos) << what;
}

TEST(Cifar10, MissingBatchIsListed) {
  test::ScopedEnv no_env("DPSTUDY_DATA_DIR", nullptr);
  ScratchDir dir;
  write_fixtures(dir.str(), {10, 10, 5, true});
  test::remove_file(dir.path() / "cifar10/data_batch_3.bin");
  try {
    load_dataset("cifar10", Split::train, {dir.str()});
    FAIL() << "expected a DataError";
  } catch (const DataError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(dir.str() + "/cifar10 (missing data_batch_3.bin)"), std::string::npos) << what;
    EXPECT_NE(what.find("tools/fetch-datasets cifar10"), std::string::npos) << what;
  }
  EXPECT_NO_THROW(load_dataset("cifar10", Split::test, {dir.str()}));
}
