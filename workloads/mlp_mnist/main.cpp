// dpstudy-mlp-mnist: a multilayer perceptron on MNIST or Fashion-MNIST (the
// network: model.cpp). Default 784-512-512-10 with ReLU.
//
// Defaults (measured on Fashion-MNIST, docs/engine.md): W = 4, sync period 1,
// 2 epochs reach about 85 % test accuracy; sync period 16 about 84 %.
#include <memory>
#include <string>

#include "dpstudy/error.hpp"
#include "dpstudy/options.hpp"
#include "dpstudy/workload.hpp"

namespace {

dpstudy::Workload mlp_mnist() {
  dpstudy::Workload w;
  w.name = "mlp-mnist";
  w.summary = "an MLP (default 784-512-512-10, ReLU) on mnist or fashion-mnist";
  w.defaults.dataset = "mnist";
  w.defaults.batch_size = 64;
  w.defaults.lr = 0.05;
  w.defaults.optimizer = dpstudy::OptimizerKind::momentum;
  w.defaults.momentum = 0.9;
  w.defaults.epochs = 2;
  auto hidden = std::make_shared<std::string>("512,512");
  w.model_options = [hidden](boost::program_options::options_description& d) {
    d.add_options()("hidden", boost::program_options::value(hidden.get())->default_value(*hidden),
                    "hidden layer widths, comma-separated");
  };
  // The widths as whole numbers, written back in one form ("512, 512" and "512,512" are one run).
  w.model_values = [hidden]() -> dpstudy::KeyValues {
    std::string text;
    for (double v : dpstudy::parse_number_list("hidden", *hidden)) {
      if (v < 1 || v != std::int64_t(v)) throw dpstudy::ConfigError("hidden", *hidden, "must be whole numbers >= 1");
      text += (text.empty() ? "" : ",") + std::to_string(std::int64_t(v));
    }
    return {{"hidden", text}};
  };
  w.list_keys = {"hidden"};
  return w;
}

}  // namespace

int main(int argc, char** argv) { return dpstudy::workload_main(argc, argv, mlp_mnist()); }
