// Named datasets: look-up order, names (their normalisation: test_prepare_data.cpp).
#include <gtest/gtest.h>

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
