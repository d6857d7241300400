// The datasets dpstudy knows by name: their shape, normalisation and files,
// apart from loading them (dataset.hpp), so that what needs only these (the
// study planner, dpstudy-analyze) does not need LibTorch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dpstudy {

enum class Split { train, test };
std::string to_string(Split split);
Split parse_split(const std::string& text);  // "train" | "test", else UsageError

enum class DataFormat { idx, cifar10_binary };

struct DatasetSpec {
  std::string name;
  DataFormat format;
  int channels, height, width, classes;
  // Standard per-channel normalisation of pixels scaled to [0, 1]:
  // x' = (x / 255 - mean[c]) / std[c].
  std::vector<double> mean, std;
  // File names per split. IDX: images file then labels file, each accepted
  // plain or with .gz. CIFAR-10: the batch files, concatenated in this order.
  std::vector<std::string> train_files, test_files;
  std::string obtain;  // how to get the files, shown when they are missing
  // Images in the official training split: what a dry run plans with when the
  // files are not on this machine (a login node, before tools/fetch-datasets).
  std::int64_t official_train = 0;

  const std::vector<std::string>& files(Split split) const {
    return split == Split::train ? train_files : test_files;
  }
};

// Every dataset dpstudy knows; adding one is one entry in dataset_spec.cpp.
const std::vector<DatasetSpec>& dataset_specs();
// Throws UsageError listing the known names.
const DatasetSpec& dataset_spec(const std::string& name);

}  // namespace dpstudy
