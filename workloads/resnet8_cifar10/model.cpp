// The network of dpstudy-resnet8-cifar10 (main.cpp): the CIFAR ResNet of
// ../common/resnet.hpp with n = 1 (a 3x3 stem with 16 channels, one basic block
// per stage at 16, 32, 64 channels, option-A shortcuts), no batch norm
// (convolutions with biases), global average pooling, 10 classes.
#include <memory>
#include <vector>

#include "../common/resnet.hpp"
#include "dpstudy/model.hpp"

dpstudy::ModelFactory dpstudy::workload_model(const DatasetSpec& spec, const KeyValues&) {
  const std::int64_t in = spec.channels, classes = spec.classes;
  return [=] {
    return std::make_shared<workloads::ResNet>(in, classes, std::vector<int>{1, 1, 1},
                                               std::vector<std::int64_t>{16, 32, 64}, false, false);
  };
}
