// The network of the out-of-tree workload in workload.cpp: one linear layer,
// its weights scaled by --init_scale.
#include <torch/nn/modules/linear.h>
#include <torch/utils.h>

#include <dpstudy/model.hpp>

#include <cstdint>
#include <memory>

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

}  // namespace

dpstudy::ModelFactory dpstudy::workload_model(const DatasetSpec& spec, const KeyValues& model_values) {
  const std::int64_t inputs = std::int64_t(spec.channels) * spec.height * spec.width;
  return [inputs, classes = std::int64_t(spec.classes), s = model_value<double>(model_values, "init_scale")] {
    return std::make_shared<Linear>(inputs, classes, s);
  };
}
