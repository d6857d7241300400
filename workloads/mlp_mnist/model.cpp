// The network of dpstudy-mlp-mnist (main.cpp): fully connected layers of the
// --hidden widths with ReLU between them; PyTorch's default initialisation
// (Kaiming-uniform weights, uniform biases).
#include <torch/nn/modules/linear.h>

#include <memory>
#include <string>
#include <vector>

#include "dpstudy/model.hpp"
#include "dpstudy/options.hpp"

namespace {

class Mlp : public dpstudy::Model {
 public:
  Mlp(std::int64_t inputs, const std::vector<std::int64_t>& hidden, std::int64_t classes) {
    std::int64_t width = inputs;
    for (std::size_t i = 0; i < hidden.size(); ++i) {
      layers_.push_back(register_module("fc" + std::to_string(i + 1), torch::nn::Linear(width, hidden[i])));
      width = hidden[i];
    }
    layers_.push_back(register_module("out", torch::nn::Linear(width, classes)));
  }

  at::Tensor forward(const at::Tensor& x) override {
    at::Tensor h = x.flatten(1);
    for (std::size_t i = 0; i + 1 < layers_.size(); ++i) h = layers_[i]->forward(h).relu_();
    return layers_.back()->forward(h);
  }

 private:
  std::vector<torch::nn::Linear> layers_;
};

}  // namespace

dpstudy::ModelFactory dpstudy::workload_model(const DatasetSpec& spec, const KeyValues& model_values) {
  std::vector<std::int64_t> widths;  // checked by main.cpp's model_values
  for (double v : parse_number_list("hidden", model_value<std::string>(model_values, "hidden"))) {
    widths.push_back(std::int64_t(v));
  }
  const std::int64_t inputs = std::int64_t(spec.channels) * spec.height * spec.width;
  const std::int64_t classes = spec.classes;
  return [inputs, widths, classes] { return std::make_shared<Mlp>(inputs, widths, classes); };
}
