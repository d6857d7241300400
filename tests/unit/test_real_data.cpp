// The readers on real bytes: the official MNIST test set (shared with the
// project) and the full Fashion-MNIST (Debian's dataset-fashion-mnist). The
// expected values were computed independently, with Python's gzip module over
// the same files. Absent data skips the test with a message.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <filesystem>

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
  EXPECT_EQ(d.images.sizes(), (std::vector<std::int64_t>{n, 1, 28, 28}));
  EXPECT_EQ(d.labels.sizes(), (std::vector<std::int64_t>{n}));
  EXPECT_EQ(d.images.min().item<int>(), 0);
  EXPECT_EQ(d.images.max().item<int>(), 255);
  EXPECT_EQ(d.images.sum(at::kLong).item<std::int64_t>(), pixel_sum);
  EXPECT_TRUE(at::equal(at::bincount(d.labels, {}, 10), at::tensor(per_class, at::kLong)));
  EXPECT_TRUE(at::equal(d.labels.narrow(0, 0, 10), at::tensor(first_labels, at::kLong)));
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
  const at::Tensor x = train.images.to(at::kFloat).div_(255.0);
  EXPECT_NEAR(x.mean().item<double>(), 0.2860, 5e-4);
  EXPECT_NEAR(x.std().item<double>(), 0.3530, 5e-4);
}
