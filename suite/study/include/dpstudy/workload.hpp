// A workload is a model plus its defaults, in one folder of two files:
//   main.cpp   the Workload below and main() calling workload_main: its name,
//              defaults and the model's own options, checked. No LibTorch.
//   model.cpp  the network (a dpstudy::Model) and dpstudy::workload_model,
//              which builds it (model.hpp).
// dpstudy_add_workload(<name> main.cpp MODEL model.cpp) makes two programs of
// them. dpstudy-<name> (main.cpp linked with dpstudy::front) reads and checks
// the command line and the study without LibTorch, whose loading takes most of
// a second: --help, --version and a refused option value or study file come at
// once. Then it replaces itself (exec) with dpstudy-<name>-engine (both
// files, linked with dpstudy::dpstudy), which reads them again and does the
// work. Adding a workload is that folder and one line add_subdirectory(<folder>)
// in workloads/CMakeLists.txt.
#pragma once

#include <boost/program_options/options_description.hpp>

#include <functional>
#include <string>
#include <vector>

#include "dpstudy/run_config.hpp"

namespace dpstudy {

struct Workload {
  std::string name;     // e.g. "mlp-mnist": the executable is dpstudy-<name>
  std::string summary;  // one line for --help
  RunConfig defaults;   // the workload's documented default hyperparameters
  // The model's own options (may add none), shown under "Model" in --help.
  std::function<void(boost::program_options::options_description&)> model_options;
  // After each run's options are parsed: the model's options checked (a
  // ConfigError naming the option, so that a bad value is refused before
  // anything runs) and resolved. They are part of the run id and the stored
  // config, and what workload_model() receives.
  std::function<KeyValues()> model_values;
  // Model options whose single value is a comma list (axes of them use '|').
  std::vector<std::string> list_keys;
};

// Parses the command line (and a study file), loads the data, trains one run or
// a whole study (HDF5 results, resume), prints progress and results.
// Exit status: 0 done (a diverged run is a result, not an error), 1 runtime
// error, 2 bad usage or option value, 3 --expect_accuracy not met, 4 --reproduce
// found a difference, 5 a study stopped by a signal (stop.hpp; it resumes).
// Linked with dpstudy::front, it checks the command line and the study, then
// executes the engine beside it (or in ../libexec/dpstudy) with the same
// arguments; linked with dpstudy::dpstudy, it is the engine.
int workload_main(int argc, char** argv, const Workload& workload);

}  // namespace dpstudy
