// dpstudy-resnet-cifar10: residual networks on CIFAR-10 (the networks:
// model.cpp, ../common/resnet.hpp).
//
// cifar-resnet (default): the CIFAR ResNets of He et al. 2016 (section 4.2),
// depth 6n + 2 (20, 32, 44, 56, 110). --batch_norm false drops batch norm: the
// ResNet-8 without batch norm of Lee et al. 2021 is --depth 8 --batch_norm false.
// resnet18: ResNet-18 adapted to 32x32 inputs.
#include <memory>
#include <string>

#include "dpstudy/error.hpp"
#include "dpstudy/workload.hpp"

namespace {

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
  // ResNet-18's depth is 18 whatever --depth says: one run id for it.
  w.model_values = [choice]() -> dpstudy::KeyValues {
    const Choice& c = *choice;
    if (c.model != "cifar-resnet" && c.model != "resnet18") {
      throw dpstudy::ConfigError("model", c.model, "is not one of: cifar-resnet, resnet18");
    }
    if (c.model == "cifar-resnet" && (c.depth < 8 || (c.depth - 2) % 6 != 0)) {
      throw dpstudy::ConfigError("depth", std::to_string(c.depth),
                                 "is not 6n+2 with n >= 1 (8, 14, 20, 32, 44, 56, 110)");
    }
    return {{"model", c.model},
            {"depth", std::int64_t(c.model == "resnet18" ? 18 : c.depth)},
            {"batch_norm", std::int64_t(c.batch_norm)}};
  };
  return w;
}

}  // namespace

int main(int argc, char** argv) { return dpstudy::workload_main(argc, argv, resnet_cifar10()); }
