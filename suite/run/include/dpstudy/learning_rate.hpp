// The learning rate at each step: scaling rule, warm-up and schedule
// (docs/engine.md has the formulas).
#pragma once

#include <cstdint>

#include "dpstudy/run_config.hpp"

namespace dpstudy {

class LearningRate {
 public:
  LearningRate(const RunConfig& config, std::int64_t steps_per_epoch);
  // The rate used for the update of step `step` (0-based).
  double at(std::int64_t step) const;
  double peak() const { return peak_; }
  std::int64_t warmup_steps() const { return warmup_; }

 private:
  RunConfig config_;
  std::int64_t steps_per_epoch_, total_, warmup_;
  double peak_, start_;
};

}  // namespace dpstudy
