// What a workload's model.cpp implements (workload.hpp): its network, and the
// function that builds it for a run.
#pragma once

#include <string>
#include <variant>

#include "dpstudy/dataset_spec.hpp"
#include "dpstudy/error.hpp"
#include "dpstudy/model_factory.hpp"
#include "dpstudy/replica.hpp"
#include "dpstudy/run_config.hpp"

namespace dpstudy {

// The factory of the workload's model for the dataset a run chose (its shape
// and classes) and the model's options as the Workload's model_values()
// checked and resolved them. Defined by each workload, once.
ModelFactory workload_model(const DatasetSpec& spec, const KeyValues& model_values);

// One of those options: model_value<std::int64_t>(values, "depth"). Integers and
// booleans are std::int64_t, numbers double, text std::string (run_config.hpp).
template <class T>
T model_value(const KeyValues& values, const std::string& key) {
  for (const auto& [k, v] : values) {
    if (k != key) continue;
    if (const T* p = std::get_if<T>(&v)) return *p;
    throw Error("model option '" + key + "' has the value " + to_text(v) + " of another type than its workload reads");
  }
  throw Error("model option '" + key + "' is not among the values the workload's model_values() gives");
}

}  // namespace dpstudy
