// An out-of-tree workload: a model of one's own trained by an installed
// dpstudy, with every option, study, MPI layout and result file of the shipped
// workloads (docs/workloads.md, "A workload of your own"). Softmax regression:
// one linear layer, an option of its own for its initial weights' scale.
#include <torch/nn/modules/linear.h>
#include <torch/utils.h>

#include <dpstudy/dataset_spec.hpp>
#include <dpstudy/error.hpp>
#include <dpstudy/workload.hpp>

#include <cstdint>
#include <memory>
#include <string>

namespace {

class Linear : public dpstudy::Model {
 public:
  Linear(std::int64_t inputs, std::int64_t classes, double init_scale)
      : fc_(register_module("fc", torch::nn::Linear(inputs, classes))) {
    torch::NoGradGuard no_grad;
    fc_->weight.mul_(init_scale);
  }
  at::Tensor forward(const at::Tensor& x) override { return fc_->forward(x.flatten(1)); }

 private:
  torch::nn::Linear fc_;
};

dpstudy::Workload linear() {
  dpstudy::Workload w;
  w.name = "linear";  // the executable is to be called dpstudy-linear
  w.summary = "softmax regression (one linear layer) on mnist or fashion-mnist";
  w.defaults.dataset = "mnist";
  w.defaults.batch_size = 32;
  w.defaults.lr = 0.1;
  w.defaults.epochs = 1;
  // Options are parsed into this value, then checked and turned into the factory.
  auto scale = std::make_shared<double>(1.0);
  w.model_options = [scale](boost::program_options::options_description& d) {
    d.add_options()("init_scale", boost::program_options::value(scale.get())->default_value(*scale),
                    "factor on LibTorch's initial weights");
  };
  w.make_model = [scale](const dpstudy::DatasetSpec& spec) -> dpstudy::ModelFactory {
    if (!(*scale >= 0)) throw dpstudy::ConfigError("init_scale", dpstudy::to_text(*scale), "must be >= 0");
    const std::int64_t inputs = std::int64_t(spec.channels) * spec.height * spec.width;
    return [inputs, classes = std::int64_t(spec.classes), s = *scale] {
      return std::make_shared<Linear>(inputs, classes, s);
    };
  };
  // Part of each run's id and stored config, like the shipped workloads' options.
  w.model_values = [scale]() -> dpstudy::KeyValues { return {{"init_scale", *scale}}; };
  return w;
}

}  // namespace

int main(int argc, char** argv) { return dpstudy::workload_main(argc, argv, linear()); }
