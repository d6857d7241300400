// dpstudy-resnet8-cifar10: ResNet-8 without batch norm on CIFAR-10, the model of
// Lee et al. 2021 (after Shallue et al. 2018; the network: model.cpp).
// Without augmentation by default, as in the steps-to-result studies.
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
  return w;
}

}  // namespace

int main(int argc, char** argv) { return dpstudy::workload_main(argc, argv, resnet8()); }
