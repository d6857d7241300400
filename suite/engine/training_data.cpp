// The data a study's runs share (normalised tensors on the run's device), and
// one run's split of it: validation positions, training positions and shards.
#include "dpstudy/training_data.hpp"

#include <ATen/ATen.h>

#include <algorithm>

#include "dpstudy/assignment.hpp"
#include "dpstudy/file_io.hpp"
#include "dpstudy/rng.hpp"

namespace dpstudy {
namespace {

constexpr std::uint64_t kValidationStream = 3;  // a stream of the data seed (see assignment.cpp)

}  // namespace

std::string TrainingData::checksums() const { return checksum_lines(spec ? spec->name : "?", files); }

at::Tensor image_tensor(const Dataset& d) {
  const DatasetSpec& s = *d.spec;
  // Only read: every use copies (normalize_images' conversion to float first of all).
  return at::from_blob(const_cast<std::uint8_t*>(d.images.data()), {d.size(), s.channels, s.height, s.width},
                       at::kByte);
}

at::Tensor label_tensor(const Dataset& d) { return at::tensor(at::ArrayRef<std::int64_t>(d.labels), at::kLong); }

at::Tensor normalize_images(const at::Tensor& images_u8, const DatasetSpec& spec) {
  const auto c = std::int64_t(spec.mean.size());
  at::Tensor mean = at::tensor(std::vector<float>(spec.mean.begin(), spec.mean.end())).view({1, c, 1, 1});
  at::Tensor stdev = at::tensor(std::vector<float>(spec.std.begin(), spec.std.end())).view({1, c, 1, 1});
  return images_u8.to(at::kFloat).mul_(1.0 / 255.0).sub_(mean).div_(stdev);
}

TrainingData prepare_labels(const Dataset& train, const Dataset& test) {
  TrainingData d;
  d.spec = train.spec;
  d.train_y = label_tensor(train);
  d.test_y = label_tensor(test);
  d.files = train.files;
  d.files.insert(d.files.end(), test.files.begin(), test.files.end());
  return d;
}

TrainingData prepare_data(const Dataset& train, const Dataset& test, const at::Device& device) {
  TrainingData d = prepare_labels(train, test);
  d.train_x = normalize_images(image_tensor(train), *train.spec).to(device);
  d.train_y = d.train_y.to(device);
  d.test_x = normalize_images(image_tensor(test), *test.spec).to(device);
  d.test_y = d.test_y.to(device);
  return d;
}

DataSplit split_data(const RunConfig& c, const at::Tensor& train_y) {
  // Validation split: a seeded fraction of the training split, held out; the
  // rest keeps its stored order so that order=stored and order=label mean what they say.
  const std::int64_t total = train_y.size(0);
  std::vector<std::int64_t> perm(static_cast<std::size_t>(total));
  for (std::int64_t i = 0; i < total; ++i) perm[std::size_t(i)] = i;
  const auto n_val = std::size_t(total - training_samples(c, total));
  if (n_val > 0) Rng::stream(c.resolved_data_seed(), kValidationStream).shuffle(perm);
  DataSplit out;
  out.val.assign(perm.begin(), perm.begin() + std::ptrdiff_t(n_val));
  out.train.assign(perm.begin() + std::ptrdiff_t(n_val), perm.end());
  std::sort(out.val.begin(), out.val.end());
  std::sort(out.train.begin(), out.train.end());
  const auto n = std::int64_t(out.train.size());
  check_global_batch(c, std::int64_t(total));
  std::vector<std::int64_t> labels(out.train.size());
  const at::Tensor labels_host = train_y.to(at::kCPU);  // no copy on the CPU
  const std::int64_t* y = labels_host.data_ptr<std::int64_t>();
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = y[out.train[i]];
  out.shards = assign_shards(n, labels.data(), assignment_spec(c));
  out.stats = assignment_stats(n, out.shards, labels.data());
  for (auto& shard : out.shards) {
    for (auto& p : shard) p = out.train[std::size_t(p)];
  }
  return out;
}

}  // namespace dpstudy
