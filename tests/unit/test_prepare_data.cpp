// The engine's tensors of a dataset: per-channel normalisation, and the
// tensors prepare_data makes of the bytes a split holds.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "dpstudy/dataset.hpp"
#include "dpstudy/fixtures.hpp"
#include "dpstudy/trainer.hpp"
#include "test_support.hpp"

using namespace dpstudy;
using dpstudy::test::ScopedEnv;
using dpstudy::test::ScratchDir;

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
  write_fixtures(a.str(), {20, 10, 1, false});
  for (const char* name : {"mnist", "cifar10"}) {
    const Dataset train = load_dataset(name, Split::train, {a.str()});
    const Dataset test = load_dataset(name, Split::test, {a.str()});
    const DatasetSpec& spec = *train.spec;
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
