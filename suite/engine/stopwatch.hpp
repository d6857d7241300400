// Seconds on the steady clock, for the Trainer's time accounts (private to engine/).
#pragma once

#include <chrono>

namespace dpstudy {

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace dpstudy
