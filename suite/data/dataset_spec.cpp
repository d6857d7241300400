// The datasets dpstudy knows, apart from their loaders: what dpstudy-analyze and
// the study planner need without LibTorch (the dpstudy_core library).
#include "dpstudy/dataset_spec.hpp"
#include "dpstudy/error.hpp"

namespace dpstudy {

std::string to_string(Split split) { return split == Split::train ? "train" : "test"; }

Split parse_split(const std::string& text) {
  if (text == "train") return Split::train;
  if (text == "test") return Split::test;
  throw UsageError("unknown split '" + text + "', expected train or test");
}

const std::vector<DatasetSpec>& dataset_specs() {
  // Means and standard deviations are the usual published per-channel values
  // over the training set; `dpstudy-data summary` recomputes them from the data.
  static const std::vector<DatasetSpec> specs = {
      {"mnist", DataFormat::idx, 1, 28, 28, 10, {0.1307}, {0.3081},
       {"train-images-idx3-ubyte", "train-labels-idx1-ubyte"},
       {"t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"},
       "run `tools/fetch-datasets mnist` (downloads and verifies the official files)", 60000},
      {"fashion-mnist", DataFormat::idx, 1, 28, 28, 10, {0.2860}, {0.3530},
       {"train-images-idx3-ubyte", "train-labels-idx1-ubyte"},
       {"t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"},
       "run `apt-get install dataset-fashion-mnist` (Debian/Ubuntu) or `tools/fetch-datasets "
       "fashion-mnist`",
       60000},
      {"cifar10", DataFormat::cifar10_binary, 3, 32, 32, 10, {0.4914, 0.4822, 0.4465},
       {0.2470, 0.2435, 0.2616},
       {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin",
        "data_batch_5.bin"},
       {"test_batch.bin"},
       "run `tools/fetch-datasets cifar10` (downloads the official binary version and verifies it)", 50000},
  };
  return specs;
}

const DatasetSpec& dataset_spec(const std::string& name) {
  std::string known;
  for (const auto& s : dataset_specs()) {
    if (s.name == name) return s;
    known += (known.empty() ? "" : ", ") + s.name;
  }
  throw UsageError("unknown dataset '" + name + "', expected one of: " + known);
}

}  // namespace dpstudy
