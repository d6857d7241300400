// dpstudy-resnet8-cifar10: ResNet-8 without batch norm on CIFAR-10, the model of
// Lee et al. 2021 (after Shallue et al. 2018): the CIFAR ResNet of
// ../common/resnet.hpp with n = 1 (a 3x3 stem with 16 channels, one basic block
// per stage at 16, 32, 64 channels, option-A shortcuts), no batch norm
// (convolutions with biases), global average pooling, 10 classes.
// Without augmentation by default, as in the steps-to-result studies.
#include <memory>

#include "../common/resnet.hpp"
#include "dpstudy/dataset.hpp"
#include "dpstudy/workload.hpp"

namespace {

dpstudy::Workload resnet8() {
  dpstudy::Workload w;
  w.name = "resnet8-cifar10";
  w.summary = "ResNet-8 without batch norm (Lee et al. 2021) on cifar10";
  w.defaults.dataset = "cifar10";
  w.defaults.batch_size = 128;
  w.defaults.lr = 0.1;
  w.defaults.optimizer = dpstudy::OptimizerKind::momentum;
  w.defaults.momentum = 0.9;
  w.defaults.epochs = 2;
  w.make_model = [](const dpstudy::DatasetSpec& spec) -> dpstudy::ModelFactory {
    const std::int64_t in = spec.channels, classes = spec.classes;
    return [=] {
      return std::make_shared<dpstudy::workloads::ResNet>(in, classes, std::vector<int>{1, 1, 1},
                                                          std::vector<std::int64_t>{16, 32, 64}, false, false);
    };
  };
  return w;
}

}  // namespace

int main(int argc, char** argv) { return dpstudy::workload_main(argc, argv, resnet8()); }
