// The readers on real bytes: the official MNIST test set (shared with the
// project) and the full Fashion-MNIST (Debian's dataset-fashion-mnist). The
// expected values were computed independently, with Python's gzip module over
// the same files. Absent data skips the test with a message.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>

#include "dpstudy/dataset.hpp"
#include "dpstudy/manifest.hpp"
#include "test_support.hpp"

using namespace dpstudy;

namespace {

std::string from_env_or(const char* var, const char* fallback) {
  const char* v = std::getenv(var);
  return v ? v : fallback;
}

void expect_split(const Dataset& d, std::int64_t n, const std::vector<std::int64_t>& per_class,
                  std::int64_t pixel_sum, const std::vector<std::int64_t>& first_labels) {
  EXPECT_EQ(d.images.size(), std::size_t(n) * 28 * 28);  // [N, 1, 28, 28]
  EXPECT_EQ(d.size(), n);
  EXPECT_EQ(*std::min_element(d.images.begin(), d.images.end()), 0);
  EXPECT_EQ(*std::max_element(d.images.begin(), d.images.end()), 255);
  EXPECT_EQ(std::accumulate(d.images.begin(), d.images.end(), std::int64_t(0)), pixel_sum);
  std::vector<std::int64_t> counts(10);
  for (std::int64_t label : d.labels) ++counts.at(std::size_t(label));
  EXPECT_EQ(counts, per_class);
  EXPECT_EQ(std::vector<std::int64_t>(d.labels.begin(), d.labels.begin() + 10), first_labels);
}

}  // namespace

TEST(RealData, MnistTestSet) {
  const std::string dir = from_env_or("DPSTUDY_TEST_MNIST_T10K", DPSTUDY_TEST_MNIST_T10K);
  if (!test::file_exists(dir + "/t10k-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "real MNIST test set not found in " << dir
                 << " (expected beside the checkout at ../shared/datasets/mnist-t10k)";
  }
  test::ScopedEnv no_env("DPSTUDY_DATA_DIR", nullptr);
  LoadOptions opt{dir, /*verify=*/true, nullptr};  // built-in manifest: SHA-256 recorded
  const Dataset d = load_dataset("mnist", Split::test, opt);
  expect_split(d, 10000, {980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009}, 264923200,
               {7, 2, 1, 0, 4, 1, 4, 9, 5, 9});
  EXPECT_EQ(Manifest::builtin().verify("mnist", d.files[0]), Manifest::Check::match);
  EXPECT_EQ(Manifest::builtin().verify("mnist", d.files[1]), Manifest::Check::match);
}

TEST(RealData, FashionMnistFull) {
  const std::string dir = from_env_or("DPSTUDY_TEST_FASHION_MNIST", DPSTUDY_TEST_FASHION_MNIST);
  if (!test::file_exists(dir + "/train-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "Fashion-MNIST not found in " << dir
                 << " (apt-get install dataset-fashion-mnist, or tools/install-deps)";
  }
  test::ScopedEnv no_env("DPSTUDY_DATA_DIR", nullptr);
  LoadOptions opt{dir, /*verify=*/true, nullptr};
  const Dataset train = load_dataset("fashion-mnist", Split::train, opt);
  expect_split(train, 60000, std::vector<std::int64_t>(10, 6000), 3431114169LL,
               {9, 0, 0, 3, 0, 2, 7, 2, 5, 5});
  const Dataset test = load_dataset("fashion-mnist", Split::test, opt);
  expect_split(test, 10000, std::vector<std::int64_t>(10, 1000), 573469082, {9, 2, 1, 1, 6, 1, 4, 6, 5, 7});
  // The published normalisation constants agree with the data to 3 decimals.
  double sum = 0, squares = 0;
  for (std::uint8_t v : train.images) {
    sum += v / 255.0;
    squares += (v / 255.0) * (v / 255.0);
  }
  const double count = double(train.images.size()), mean = sum / count;
  EXPECT_NEAR(mean, 0.2860, 5e-4);
  EXPECT_NEAR(std::sqrt((squares - count * mean * mean) / (count - 1)), 0.3530, 5e-4);
}
