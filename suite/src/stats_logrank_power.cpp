// The log-rank test's power by simulation of the design at hand. Schoenfeld's
// formula (stats.cpp) is for many events; a study of seeds has few, where it
// promises 80 % and gives 60 to 77 % (docs/analysis.md).
#include <boost/math/distributions/normal.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "dpstudy/error.hpp"
#include "dpstudy/rng.hpp"
#include "dpstudy/stats.hpp"

namespace dpstudy::stats {
namespace {

constexpr std::uint64_t kSeed = 0x6c6f6772616e6bull;  // one fixed stream: a table prints the same figures each time
constexpr double kLargestRatio = 1000;
constexpr std::int64_t kMostRuns = 1000;

void check_goal(double reached, double alpha, int studies) {
  if (!(reached > 0 && reached <= 1)) throw UsageError("the log-rank power needs runs that reached the goal");
  if (!(alpha > 0 && alpha < 1)) throw UsageError("alpha must be in (0, 1)");
  if (studies < 1) throw UsageError("the log-rank power needs at least one simulated study");
}

void check_design(std::int64_t n_a, std::int64_t n_b, double reached, double alpha, int studies) {
  if (n_a < 1 || n_b < 1) throw UsageError("the log-rank power needs runs in both groups");
  check_goal(reached, alpha, studies);
}

// The end time C (a's hazard 1, b's `ratio`) at which the pooled fraction of
// runs at the event is `reached`: share_a (1 - e^-C) + share_b (1 - e^-ratio C).
double end_time(double share_a, double ratio, double reached) {
  if (reached >= 1) return std::numeric_limits<double>::infinity();
  const auto at = [&](double c) { return share_a * -std::expm1(-c) + (1 - share_a) * -std::expm1(-ratio * c); };
  double lo = 0, hi = 1;
  while (at(hi) < reached) hi *= 2;
  for (int i = 0; i < 100 && hi - lo > 1e-12 * hi; ++i) {
    const double mid = (lo + hi) / 2;
    (at(mid) < reached ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

// The two-group log-rank chi-squared of times without ties, every run not at
// the event by `end` censored there (after every event): what logrank() gives
// on such data, without its general bookkeeping, since it runs thousands of times.
double logrank_chi2(std::vector<std::pair<double, bool>>& times, std::int64_t n_a, double end) {
  std::sort(times.begin(), times.end());
  double risk_a = double(n_a), risk = double(times.size()), observed_minus_expected = 0, variance = 0;
  for (const auto& [t, in_a] : times) {
    if (t >= end) break;
    const double share = risk_a / risk;
    observed_minus_expected += (in_a ? 1 : 0) - share;
    variance += share * (1 - share);
    risk -= 1;
    risk_a -= in_a ? 1 : 0;
  }
  return variance > 0 ? observed_minus_expected * observed_minus_expected / variance : 0;
}

}  // namespace

double logrank_power_simulated(std::int64_t n_a, std::int64_t n_b, double hazard_ratio, double reached, double alpha,
                               int studies) {
  check_design(n_a, n_b, reached, alpha, studies);
  if (!(hazard_ratio > 0) || !std::isfinite(hazard_ratio)) throw UsageError("the hazard ratio must be > 0");
  const double z = boost::math::quantile(boost::math::normal(), 1 - alpha / 2), critical = z * z;
  const double end = end_time(double(n_a) / double(n_a + n_b), hazard_ratio, reached);
  std::vector<std::pair<double, bool>> times(std::size_t(n_a + n_b));
  int rejected = 0;
  for (int s = 0; s < studies; ++s) {
    // The same draws for every ratio (common random numbers): the power is
    // then a smooth function of the ratio, which the searches below need.
    Rng rng = Rng::stream(kSeed, std::uint64_t(s));
    for (std::size_t i = 0; i < times.size(); ++i) {
      const bool in_a = std::int64_t(i) < n_a;
      const double exponential = -std::log1p(-rng.uniform());
      times[i] = {in_a ? exponential : exponential / hazard_ratio, in_a};
    }
    rejected += logrank_chi2(times, n_a, end) > critical;
  }
  return double(rejected) / double(studies);
}

double logrank_detectable_hazard_ratio_simulated(std::int64_t n_a, std::int64_t n_b, double reached, double alpha,
                                                 double power, int studies) {
  check_design(n_a, n_b, reached, alpha, studies);
  const auto detects = [&](double log_ratio) {
    return logrank_power_simulated(n_a, n_b, std::exp(log_ratio), reached, alpha, studies) >= power;
  };
  double lo = 0, hi = std::log(kLargestRatio);
  if (!detects(hi)) return std::numeric_limits<double>::infinity();
  while (hi - lo > 1e-3) {  // a ratio to 0.1 %, more than the simulation's error
    const double mid = (lo + hi) / 2;
    (detects(mid) ? hi : lo) = mid;
  }
  return std::exp(hi);
}

std::int64_t logrank_runs_needed_simulated(double hazard_ratio, double reached, double alpha, double power,
                                           int studies) {
  if (!(hazard_ratio > 0) || hazard_ratio == 1 || !std::isfinite(hazard_ratio)) {
    throw UsageError("the hazard ratio must be > 0 and not 1");
  }
  check_goal(reached, alpha, studies);
  // Equal groups: R and 1/R are the same design with the groups' names swapped.
  const double ratio = std::max(hazard_ratio, 1 / hazard_ratio);
  const auto detects = [&](std::int64_t n) {
    return logrank_power_simulated(n, n, ratio, reached, alpha, studies) >= power;
  };
  // Schoenfeld's count is a least one: start there (at least 2 runs a group).
  const double events = logrank_events_needed(ratio, 0.5, alpha, power);
  std::int64_t lo = 1, hi = std::max<std::int64_t>(2, std::int64_t(std::ceil(events / reached / 2)));
  if (hi > kMostRuns) return -1;
  while (!detects(hi)) {
    lo = hi;
    hi *= 2;
    if (hi > kMostRuns) {
      if (!detects(kMostRuns)) return -1;
      hi = kMostRuns;
      break;
    }
  }
  while (hi - lo > 1) {
    const std::int64_t mid = (lo + hi) / 2;
    (detects(mid) ? hi : lo) = mid;
  }
  return std::max<std::int64_t>(hi, 2);
}

}  // namespace dpstudy::stats
