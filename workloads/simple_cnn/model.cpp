// The network of dpstudy-simple-cnn (main.cpp): conv 5x5, 32 channels, ReLU,
// max-pool 2x2; conv 5x5, 64 channels, ReLU, max-pool 2x2; fully connected
// 1024, ReLU; 10 outputs. Convolutions keep the spatial size ("same" padding),
// so 28x28 becomes 7x7x64 before the dense layers. LibTorch's default
// initialisation.
#include <torch/nn/functional/pooling.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include <memory>

#include "dpstudy/model.hpp"

namespace {

namespace nn = torch::nn;

class SimpleCnn : public dpstudy::Model {
 public:
  SimpleCnn(std::int64_t channels, std::int64_t side, std::int64_t classes)
      : conv1(register_module("conv1", nn::Conv2d(nn::Conv2dOptions(channels, 32, /*kernel_size=*/5).padding(2)))),
        conv2(register_module("conv2", nn::Conv2d(nn::Conv2dOptions(32, 64, /*kernel_size=*/5).padding(2)))),
        fc1(register_module("fc1", nn::Linear(64 * (side / 4) * (side / 4), 1024))),
        fc2(register_module("fc2", nn::Linear(1024, classes))) {}

  at::Tensor forward(const at::Tensor& x) override {
    at::Tensor y = at::max_pool2d(conv1(x).relu_(), {2, 2});
    y = at::max_pool2d(conv2(y).relu_(), {2, 2});
    return fc2(fc1(y.flatten(1)).relu_());
  }

 private:
  nn::Conv2d conv1, conv2;
  nn::Linear fc1, fc2;
};

}  // namespace

dpstudy::ModelFactory dpstudy::workload_model(const DatasetSpec& spec, const KeyValues&) {
  const std::int64_t channels = spec.channels, side = spec.height, classes = spec.classes;
  return [=] { return std::make_shared<SimpleCnn>(channels, side, classes); };
}
