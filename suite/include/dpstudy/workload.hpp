// A workload is a model plus its defaults; workload_main() gives it the whole
// command line, data loading, the engine and the result table. Adding one is a
// folder under workloads/ with a main.cpp calling workload_main, and one line
// add_subdirectory(<folder>) in workloads/CMakeLists.txt.
#pragma once

#include <boost/program_options/options_description.hpp>

#include <functional>
#include <string>

#include "dpstudy/replica.hpp"
#include "dpstudy/run_config.hpp"

namespace dpstudy {

struct DatasetSpec;

struct Workload {
  std::string name;     // e.g. "mlp-mnist": the executable is dpstudy-<name>
  std::string summary;  // one line for --help
  RunConfig defaults;   // the workload's documented default hyperparameters
  // The model's own options (may add none), shown under "Model" in --help.
  std::function<void(boost::program_options::options_description&)> model_options;
  // After parsing: the factory for the dataset chosen (its shape and classes).
  std::function<ModelFactory(const DatasetSpec&)> make_model;
  // After parsing: the model's options as resolved (part of the run id and stored config).
  std::function<KeyValues()> model_values;
  // Model options whose single value is a comma list (axes of them use '|').
  std::vector<std::string> list_keys;
};

// Parses the command line (and a study file), loads the data, trains one run or
// a whole study (HDF5 results, resume), prints progress and results.
// Exit status: 0 done (a diverged run is a result, not an error), 1 runtime
// error, 2 bad usage or option value, 3 --expect_accuracy not met, 4 --reproduce
// found a difference, 5 a study stopped by a signal (stop.hpp; it resumes).
int workload_main(int argc, char** argv, const Workload& workload);

}  // namespace dpstudy
