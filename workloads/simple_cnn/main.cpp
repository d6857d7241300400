// dpstudy-simple-cnn: the Simple-CNN of Shallue et al. 2018 and Lee et al. 2021
// on MNIST or Fashion-MNIST (the network: model.cpp).
#include "dpstudy/workload.hpp"

namespace {

dpstudy::Workload simple_cnn() {
  dpstudy::Workload w;
  w.name = "simple-cnn";
  w.summary = "the Simple-CNN of Shallue et al. 2018 on mnist or fashion-mnist";
  w.defaults.dataset = "mnist";
  w.defaults.batch_size = 64;
  w.defaults.lr = 0.05;
  w.defaults.optimizer = dpstudy::OptimizerKind::momentum;
  w.defaults.momentum = 0.9;
  w.defaults.epochs = 2;
  return w;
}

}  // namespace

int main(int argc, char** argv) { return dpstudy::workload_main(argc, argv, simple_cnn()); }
