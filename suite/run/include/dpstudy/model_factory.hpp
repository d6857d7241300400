// The type a workload hands the engine to build its model, declared without
// LibTorch's headers for code that only passes factories along (the model
// itself: replica.hpp).
#pragma once

#include <functional>
#include <memory>

namespace dpstudy {

class Model;

// Builds a fresh model. Called under a seeded torch generator for the initial
// weights; must draw the same random numbers every time it is called.
using ModelFactory = std::function<std::shared_ptr<Model>()>;

}  // namespace dpstudy
