// The helpers that the statistics files share (private to stats/).
#pragma once

#include <cstddef>
#include <limits>
#include <vector>

namespace dpstudy::stats::detail {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double mean_of(const std::vector<double>& x);
double var_of(const std::vector<double>& x);  // ddof = 1
// Throws UsageError naming `test` when a group has fewer than `at_least` values.
void need(std::size_t n, std::size_t at_least, const char* test);
// Average ranks (1-based) of the pooled values; `tie_term` gets sum(t^3 - t).
std::vector<double> ranks(const std::vector<double>& x, double* tie_term);

}  // namespace dpstudy::stats::detail
