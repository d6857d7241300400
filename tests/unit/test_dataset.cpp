// Named datasets: look-up order, normalisation, names.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>

#include "dpstudy/dataset.hpp"
#include "dpstudy/error.hpp"
#include "dpstudy/fixtures.hpp"
#include "test_support.hpp"

using namespace dpstudy;
using dpstudy::test::ScopedEnv;
using dpstudy::test::ScratchDir;

TEST(DatasetLookup, DataDirBeatsEnvironmentWhichBeatsTheRest) {
  ScratchDir a, b;
  write_fixtures(a.str(), {20, 10, 1, true});
  write_fixtures(b.str(), {30, 10, 2, true});
  {
    ScopedEnv env("DPSTUDY_DATA_DIR", b.str().c_str());
    EXPECT_EQ(load_dataset("fashion-mnist", Split::train, {a.str()}).size(), 20);
    EXPECT_EQ(load_dataset("fashion-mnist", Split::train, {}).size(), 30);
    EXPECT_EQ(find_dataset_dir(dataset_spec("cifar10"), Split::test, ""), b.str() + "/cifar10");
  }
  ScopedEnv env("DPSTUDY_DATA_DIR", nullptr);
  const auto roots = search_roots("/x");
  ASSERT_EQ(roots.size(), 5u);
  EXPECT_EQ(roots[0].origin, "--data-dir");
  EXPECT_EQ(roots[0].dir, "/x");
  EXPECT_EQ(roots[1].origin, "DPSTUDY_DATA_DIR");
  EXPECT_EQ(roots[1].dir, "");
  EXPECT_EQ(roots[2].origin, "project");
  EXPECT_EQ(roots[4].dir, "/usr/share/datasets");
}

TEST(DatasetLookup, DataDirMayBeTheDatasetFolderItself) {
  ScopedEnv env("DPSTUDY_DATA_DIR", nullptr);
  ScratchDir a;
  write_fixtures(a.str(), {20, 10, 1, true});
  const Dataset d = load_dataset("mnist", Split::test, {a.str() + "/mnist"});
  EXPECT_EQ(d.dir, a.str() + "/mnist");
  EXPECT_EQ(d.size(), 10);
}

TEST(DatasetNames, UnknownNamesAndSplitsAreUsageErrors) {
  try {
    dataset_spec("imagenet");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "unknown dataset 'imagenet', expected one of: mnist, fashion-mnist, cifar10");
  }
  EXPECT_THROW(parse_split("validation"), UsageError);
  EXPECT_EQ(parse_split("test"), Split::test);
  EXPECT_EQ(to_string(Split::train), "train");
}

TEST(DatasetNormalize, PerChannelMeanAndStd) {
  const DatasetSpec cifar = dataset_spec("cifar10");
  at::Tensor x = at::zeros({2, 3, 2, 2}, at::kByte);
  x.select(1, 1).fill_(255);
  const at::Tensor y = normalize_images(x, cifar);
  EXPECT_EQ(y.scalar_type(), at::kFloat);
  EXPECT_NEAR(y[0][0][0][0].item<float>(), (0.0 - 0.4914) / 0.2470, 1e-5);
  EXPECT_NEAR(y[1][1][1][1].item<float>(), (1.0 - 0.4822) / 0.2435, 1e-5);
  EXPECT_NEAR(y[1][2][0][1].item<float>(), (0.0 - 0.4465) / 0.2616, 1e-5);
}

TEST(DatasetNormalize, SubsetByIndex) {
  ScopedEnv env("DPSTUDY_DATA_DIR", nullptr);
  ScratchDir a;
  write_fixtures(a.str(), {20, 10, 1, false});
  const Dataset d = load_dataset("mnist", Split::train, {a.str()});
  const at::Tensor idx = at::tensor({3, 0, 7}, at::kLong);
  const at::Tensor sub = d.normalized(idx);
  EXPECT_EQ(sub.sizes(), (std::vector<std::int64_t>{3, 1, 28, 28}));
  EXPECT_TRUE(at::allclose(sub[0], d.normalized()[3]));
  EXPECT_TRUE(at::allclose(sub[2], d.normalized()[7]));
}
