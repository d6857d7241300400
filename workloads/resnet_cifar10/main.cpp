// dpstudy-resnet-cifar10: residual networks on CIFAR-10.
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
#include <torch/nn/functional/pooling.h>
#include <torch/nn/init.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include <memory>
#include <string>
#include <vector>

#include "dpstudy/dataset.hpp"
#include "dpstudy/error.hpp"
#include "dpstudy/workload.hpp"

namespace {

namespace nn = torch::nn;

nn::Conv2d conv3x3(std::int64_t in, std::int64_t out, std::int64_t stride, bool bias) {
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

class ResNet : public dpstudy::Model {
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

struct Choice {
  std::string model = "cifar-resnet";
  int depth = 20;
  bool batch_norm = true;
};

dpstudy::Workload resnet_cifar10() {
  dpstudy::Workload w;
  w.name = "resnet-cifar10";
  w.summary = "CIFAR ResNets (He et al. 2016, depth 6n+2) and ResNet-18 on cifar10";
  w.defaults.dataset = "cifar10";
  w.defaults.batch_size = 128;
  w.defaults.lr = 0.1;
  w.defaults.optimizer = dpstudy::OptimizerKind::momentum;
  w.defaults.momentum = 0.9;
  w.defaults.weight_decay = 1e-4;
  w.defaults.augment = dpstudy::Augmentation::crop_flip;
  w.defaults.epochs = 2;
  auto choice = std::make_shared<Choice>();
  w.model_options = [choice](boost::program_options::options_description& d) {
    namespace po = boost::program_options;
    d.add_options()("model", po::value(&choice->model)->default_value(choice->model), "cifar-resnet or resnet18")(
        "depth", po::value(&choice->depth)->default_value(choice->depth),
        "cifar-resnet depth, 6n+2: 8, 14, 20, 32, 44, 56, 110")(
        "batch_norm", po::value(&choice->batch_norm)->default_value(choice->batch_norm), "use batch normalisation");
  };
  w.make_model = [choice](const dpstudy::DatasetSpec& spec) -> dpstudy::ModelFactory {
    const Choice c = *choice;
    const std::int64_t in = spec.channels, classes = spec.classes;
    if (c.model == "resnet18") {
      return [=] { return std::make_shared<ResNet>(in, classes, std::vector<int>{2, 2, 2, 2},
                                                   std::vector<std::int64_t>{64, 128, 256, 512}, c.batch_norm, true); };
    }
    if (c.model != "cifar-resnet") throw dpstudy::ConfigError("model", c.model, "is not one of: cifar-resnet, resnet18");
    if (c.depth < 8 || (c.depth - 2) % 6 != 0) {
      throw dpstudy::ConfigError("depth", std::to_string(c.depth),
                                 "is not 6n+2 with n >= 1 (8, 14, 20, 32, 44, 56, 110)");
    }
    const int n = (c.depth - 2) / 6;
    return [=] { return std::make_shared<ResNet>(in, classes, std::vector<int>{n, n, n},
                                                 std::vector<std::int64_t>{16, 32, 64}, c.batch_norm, false); };
  };
  w.model_values = [choice]() -> dpstudy::KeyValues {
    return {{"model", choice->model},
            {"depth", std::int64_t(choice->model == "resnet18" ? 18 : choice->depth)},
            {"batch_norm", std::int64_t(choice->batch_norm)}};
  };
  return w;
}

}  // namespace

int main(int argc, char** argv) { return dpstudy::workload_main(argc, argv, resnet_cifar10()); }
