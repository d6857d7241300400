// An out-of-tree workload: a model of one's own trained by an installed
// dpstudy, with every option, study, MPI layout and result file of the shipped
// workloads (docs/workloads.md, "A workload of your own"). Softmax regression
// with an option of its own for its initial weights' scale; this file is the
// workload (name, defaults, that option), model.cpp the network.
#include <dpstudy/error.hpp>
#include <dpstudy/workload.hpp>

#include <memory>

namespace {

dpstudy::Workload linear() {
  dpstudy::Workload w;
  w.name = "linear";  // the executable is dpstudy-linear
  w.summary = "softmax regression (one linear layer) on mnist or fashion-mnist";
  w.defaults.dataset = "mnist";
  w.defaults.batch_size = 32;
  w.defaults.lr = 0.1;
  w.defaults.epochs = 1;
  // Options are parsed into this value for each run, then checked and resolved.
  auto scale = std::make_shared<double>(1.0);
  w.model_options = [scale](boost::program_options::options_description& d) {
    d.add_options()("init_scale", boost::program_options::value(scale.get())->default_value(*scale),
                    "factor on LibTorch's initial weights");
  };
  // Part of each run's id and stored config, like the shipped workloads' options.
  w.model_values = [scale]() -> dpstudy::KeyValues {
    if (!(*scale >= 0)) throw dpstudy::ConfigError("init_scale", dpstudy::to_text(*scale), "must be >= 0");
    return {{"init_scale", *scale}};
  };
  return w;
}

}  // namespace

int main(int argc, char** argv) { return dpstudy::workload_main(argc, argv, linear()); }
