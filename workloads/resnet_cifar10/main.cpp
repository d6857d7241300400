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
#include <memory>
#include <string>
#include <vector>

#include "../common/resnet.hpp"
#include "dpstudy/dataset.hpp"
#include "dpstudy/error.hpp"
#include "dpstudy/workload.hpp"

namespace {

using dpstudy::workloads::ResNet;

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
