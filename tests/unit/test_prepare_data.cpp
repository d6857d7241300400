// The engine's tensors of a dataset: per-channel normalisation, and the
// tensors prepare_data makes of the bytes a split holds, and prepare_labels of a dry run.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "dpstudy/dataset.hpp"
#include "dpstudy/fixtures.hpp"
#include "dpstudy/trainer.hpp"
#include "test_support.hpp"

using namespace dpstudy;
using dpstudy::test::ScopedEnv;
using dpstudy::test::ScratchDir;

namespace {
// Generated train and test splits (20 and 10 images) of each file format, written to `dir`.
std::vector<std::pair<Dataset, Dataset>> generated_splits(const ScratchDir& dir) {
  write_fixtures(dir.str(), {20, 10, 1, false});
  std::vector<std::pair<Dataset, Dataset>> out;
  for (const char* name : {"mnist", "cifar10"}) {
    out.emplace_back(load_dataset(name, Split::train, {dir.str()}), load_dataset(name, Split::test, {dir.str()}));
  }
  return out;
}
}  // namespace

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

TEST(DatasetNormalize, PrepareDataMakesTensorsOfTheBytes) {
  ScopedEnv env("DPSTUDY_DATA_DIR", nullptr);
  ScratchDir a;
  for (const auto& [train, test] : generated_splits(a)) {
    const DatasetSpec& spec = *train.spec;
    const std::string& name = spec.name;
    const TrainingData d = prepare_data(train, test);
    EXPECT_EQ(d.train_x.sizes(), (std::vector<std::int64_t>{20, spec.channels, spec.height, spec.width})) << name;
    EXPECT_EQ(d.test_x.size(0), 10);
    EXPECT_TRUE(at::equal(d.train_y, at::tensor(at::ArrayRef<std::int64_t>(train.labels), at::kLong)));
    EXPECT_TRUE(at::equal(d.test_y, at::tensor(at::ArrayRef<std::int64_t>(test.labels), at::kLong)));
    // One pixel by hand: image 3, last channel, row 5, column 7.
    const std::size_t at3 = ((3 * std::size_t(spec.channels) + std::size_t(spec.channels - 1)) * std::size_t(spec.height) + 5) *
                                std::size_t(spec.width) + 7;
    const float expected = float((train.images[at3] / 255.0 - spec.mean.back()) / spec.std.back());
    EXPECT_NEAR(d.train_x[3][spec.channels - 1][5][7].item<float>(), expected, 1e-5) << name;
    EXPECT_TRUE(at::equal(d.train_x, normalize_images(image_tensor(train), spec)));
  }
}

TEST(DatasetNormalize, ADryRunsDataHasTheLabelsAndFilesButNoImages) {
  ScopedEnv env("DPSTUDY_DATA_DIR", nullptr);
  ScratchDir a;
  for (const auto& [train, test] : generated_splits(a)) {
    const std::string& name = train.spec->name;
    const TrainingData full = prepare_data(train, test), labels = prepare_labels(train, test);
    EXPECT_FALSE(labels.train_x.defined()) << name;
    EXPECT_FALSE(labels.test_x.defined()) << name;
    EXPECT_TRUE(at::equal(labels.train_y, full.train_y)) << name;
    EXPECT_TRUE(at::equal(labels.test_y, full.test_y)) << name;
    EXPECT_EQ(labels.checksums(), full.checksums()) << name;  // what a dry run compares with the run files'
    EXPECT_EQ(labels.spec, full.spec);
    // A run's split of them, as the dry run checks it: the same.
    RunConfig c;
    c.workers = 2;
    c.batch_size = 4;
    c.dirichlet_alpha = 0.5;
    EXPECT_EQ(split_data(c, labels.train_y).shards, split_data(c, full.train_y).shards) << name;
  }
}
