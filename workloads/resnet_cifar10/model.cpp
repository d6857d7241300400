// The networks of dpstudy-resnet-cifar10 (main.cpp), built by ../common/resnet.hpp.
//
// cifar-resnet (default): the CIFAR ResNets of He et al. 2016 (section 4.2),
// depth 6n + 2 (20, 32, 44, 56, 110): a 3x3 convolution with 16 channels, three
// stages of n basic blocks with 16, 32 and 64 channels (stride 2 entering the
// second and third), global average pooling and a 10-way linear layer.
// Shortcuts are option A, as He et al. used on CIFAR-10: identity, and where the
// shape changes, stride-2 subsampling with the new channels zero-padded
// (no parameters). --batch_norm false drops batch norm (convolutions get biases):
// the ResNet-8 without batch norm of Lee et al. 2021 is --depth 8 --batch_norm false.
//
// resnet18: ResNet-18 adapted to 32x32 inputs: a 3x3 stem with 64 channels and
// no max-pool, stages of 2 blocks with 64, 128, 256, 512 channels, option B
// shortcuts (1x1 convolution and batch norm) where the shape changes.
//
// Initialisation: Kaiming normal (fan-out, ReLU) for convolutions, batch-norm
// weights 1 and biases 0, LibTorch's default for the linear layer.
#include <memory>
#include <string>
#include <vector>

#include "../common/resnet.hpp"
#include "dpstudy/model.hpp"

dpstudy::ModelFactory dpstudy::workload_model(const DatasetSpec& spec, const KeyValues& model_values) {
  using workloads::ResNet;
  const bool batch_norm = model_value<std::int64_t>(model_values, "batch_norm") != 0;
  const std::int64_t in = spec.channels, classes = spec.classes;
  if (model_value<std::string>(model_values, "model") == "resnet18") {
    return [=] { return std::make_shared<ResNet>(in, classes, std::vector<int>{2, 2, 2, 2},
                                                 std::vector<std::int64_t>{64, 128, 256, 512}, batch_norm, true); };
  }
  const int n = int((model_value<std::int64_t>(model_values, "depth") - 2) / 6);  // 6n+2, checked in main.cpp
  return [=] { return std::make_shared<ResNet>(in, classes, std::vector<int>{n, n, n},
                                               std::vector<std::int64_t>{16, 32, 64}, batch_norm, false); };
}
