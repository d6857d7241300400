// Residual networks for 32x32 images, shared by the ResNet workloads
// (resnet_cifar10, resnet8_cifar10). Definitions: docs/workloads.md.
#pragma once

#include <torch/nn/init.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include <string>
#include <vector>

#include "dpstudy/replica.hpp"

namespace dpstudy::workloads {

namespace nn = torch::nn;

inline nn::Conv2d conv3x3(std::int64_t in, std::int64_t out, std::int64_t stride, bool bias) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, /*kernel_size=*/3).stride(stride).padding(1).bias(bias));
}

struct BlockImpl : nn::Module {
  BlockImpl(std::int64_t in, std::int64_t out, std::int64_t step, bool batch_norm, bool projection)
      : conv1(register_module("conv1", conv3x3(in, out, step, !batch_norm))),
        conv2(register_module("conv2", conv3x3(out, out, 1, !batch_norm))),
        pad_channels(out - in),
        stride(step) {
    if (batch_norm) {
      bn1 = register_module("bn1", nn::BatchNorm2d(out));
      bn2 = register_module("bn2", nn::BatchNorm2d(out));
    }
    if (projection && (step != 1 || in != out)) {
      proj = register_module("shortcut", nn::Sequential(nn::Conv2d(nn::Conv2dOptions(in, out, 1).stride(step).bias(!batch_norm))));
      if (batch_norm) proj->push_back(nn::BatchNorm2d(out));
    }
  }

  at::Tensor forward(const at::Tensor& x) {
    at::Tensor y = conv1(x);
    if (bn1) y = bn1(y);
    y = conv2(y.relu_());
    if (bn2) y = bn2(y);
    return y.add_(shortcut(x)).relu_();
  }

  at::Tensor shortcut(const at::Tensor& x) {
    if (proj) return proj->forward(x);
    if (stride == 1 && pad_channels == 0) return x;
    // Option A: subsample, then zero channels split between both sides.
    const at::Tensor sub = x.slice(2, 0, x.size(2), stride).slice(3, 0, x.size(3), stride);
    return at::constant_pad_nd(sub, {0, 0, 0, 0, pad_channels / 2, pad_channels - pad_channels / 2}, 0);
  }

  nn::Conv2d conv1, conv2;
  nn::BatchNorm2d bn1{nullptr}, bn2{nullptr};
  nn::Sequential proj{nullptr};
  std::int64_t pad_channels, stride;
};
TORCH_MODULE(Block);

class ResNet : public Model {
 public:
  // `blocks` per stage, `widths` per stage; option B shortcuts if `projection`.
  ResNet(std::int64_t in_channels, std::int64_t classes, std::vector<int> blocks, std::vector<std::int64_t> widths,
         bool batch_norm, bool projection)
      : stem(register_module("stem", conv3x3(in_channels, widths[0], 1, !batch_norm))) {
    if (batch_norm) stem_bn = register_module("stem_bn", nn::BatchNorm2d(widths[0]));
    std::int64_t in = widths[0];
    for (std::size_t s = 0; s < blocks.size(); ++s) {
      for (int b = 0; b < blocks[s]; ++b) {
        const std::int64_t stride = (s > 0 && b == 0) ? 2 : 1;
        layers.push_back(register_module("stage" + std::to_string(s + 1) + "_block" + std::to_string(b + 1),
                                         Block(in, widths[s], stride, batch_norm, projection)));
        in = widths[s];
      }
    }
    fc = register_module("fc", nn::Linear(in, classes));
    for (auto& m : modules(/*include_self=*/false)) {
      if (auto* conv = m->as<nn::Conv2d>()) {
        nn::init::kaiming_normal_(conv->weight, 0.0, torch::kFanOut, torch::kReLU);
        if (conv->bias.defined()) nn::init::zeros_(conv->bias);
      } else if (auto* bn = m->as<nn::BatchNorm2d>()) {
        nn::init::ones_(bn->weight);
        nn::init::zeros_(bn->bias);
      }
    }
  }

  at::Tensor forward(const at::Tensor& x) override {
    at::Tensor y = stem(x);
    if (stem_bn) y = stem_bn(y);
    y = y.relu_();
    for (auto& block : layers) y = block->forward(y);
    return fc(y.mean({2, 3}));  // global average pooling
  }

 private:
  nn::Conv2d stem;
  nn::BatchNorm2d stem_bn{nullptr};
  std::vector<Block> layers;
  nn::Linear fc{nullptr};
};

}  // namespace dpstudy::workloads
