#include "dpstudy/metrics.hpp"

namespace dpstudy {

std::string to_string(RunStatus s) {
  switch (s) {
    case RunStatus::completed: return "completed";
    case RunStatus::diverged: return "diverged";
    case RunStatus::stopped: return "stopped";
    case RunStatus::beaten:
      return "beaten";
  }
  return "?";
}

std::int64_t first_reaching(const std::vector<std::int64_t>& steps, const std::vector<double>& values, double target,
                            bool lower_is_better) {
  for (std::size_t i = 0; i < steps.size() && i < values.size(); ++i) {
    if (lower_is_better ? values[i] <= target : values[i] >= target) return steps[i];
  }
  return -1;
}

}  // namespace dpstudy
