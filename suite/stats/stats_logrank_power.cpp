// The log-rank test's power by simulation of the design at hand. Schoenfeld's
// formula (below) is for many events and continuous times; a study of seeds
// has few, where it promises 80 % and gives 60 to 77 % (docs/analysis.md), and
// its runs reach a goal at evaluations, whose ties lower the power further.
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

void check_goal(const Reaching& reaching, double alpha, int studies) {
  const double reached = reaching.reached;
  if (!(reached > 0 && reached <= 1)) throw UsageError("the log-rank power needs runs that reached the goal");
  const auto& by = reaching.by_time;
  for (std::size_t i = 0; i < by.size(); ++i) {
    if (!(by[i] > (i ? by[i - 1] : 0) && by[i] <= reached)) {
      throw UsageError("the log-rank power's fractions at the goal by each time must rise within (0, reached]");
    }
  }
  if (!by.empty() && by.back() != reached) {
    throw UsageError("the log-rank power's fractions at the goal by each time must end at the fraction reached");
  }
  if (!(alpha > 0 && alpha < 1)) throw UsageError("alpha must be in (0, 1)");
  if (studies < 1) throw UsageError("the log-rank power needs at least one simulated study");
}

void check_design(std::int64_t n_a, std::int64_t n_b, const Reaching& reaching, double alpha, int studies) {
  if (n_a < 1 || n_b < 1) throw UsageError("the log-rank power needs runs in both groups");
  check_goal(reaching, alpha, studies);
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

// The two-group log-rank chi-squared, every run not at the event censored at
// the end (time infinity, after every event), runs of one time tied (Mantel's
// hypergeometric variance): what logrank() gives on such data, without its
// general bookkeeping, since it runs thousands of times.
double logrank_chi2(std::vector<std::pair<double, bool>>& times, std::int64_t n_a) {
  std::sort(times.begin(), times.end());
  double risk_a = double(n_a), risk = double(times.size()), observed_minus_expected = 0, variance = 0;
  for (std::size_t i = 0; i < times.size() && !std::isinf(times[i].first);) {
    std::size_t j = i;
    double events_a = 0;
    for (; j < times.size() && times[j].first == times[i].first; ++j) events_a += times[j].second ? 1 : 0;
    const double events = double(j - i), share = risk_a / risk;
    observed_minus_expected += events_a - events * share;
    if (risk > 1) variance += events * share * (1 - share) * (risk - events) / (risk - 1);
    risk -= events;
    risk_a -= events_a;
    i = j;
  }
  return variance > 0 ? observed_minus_expected * observed_minus_expected / variance : 0;
}

}  // namespace

std::vector<double> reached_by_time(const Censored& a, const Censored& b) {
  std::vector<double> events;
  for (const Censored* c : {&a, &b}) {
    for (std::size_t i = 0; i < c->time.size(); ++i) {
      if (c->event[i]) events.push_back(c->time[i]);
    }
  }
  std::sort(events.begin(), events.end());
  const auto runs = double(a.time.size() + b.time.size());
  std::vector<double> by;
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (i + 1 == events.size() || events[i + 1] != events[i]) by.push_back(double(i + 1) / runs);
  }
  return by;
}

double logrank_power_simulated(std::int64_t n_a, std::int64_t n_b, double hazard_ratio, const Reaching& reaching,
                               double alpha, int studies) {
  check_design(n_a, n_b, reaching, alpha, studies);
  if (!(hazard_ratio > 0) || !std::isfinite(hazard_ratio)) throw UsageError("the hazard ratio must be > 0");
  const double z = boost::math::quantile(boost::math::normal(), 1 - alpha / 2), critical = z * z;
  const double share_a = double(n_a) / double(n_a + n_b);
  const double end = end_time(share_a, hazard_ratio, reaching.reached);
  // Tied times: the times by which the pooled fractions are at the goal, each
  // run's time the first of them at or after it (its index: only the order counts).
  std::vector<double> cuts;
  for (double f : reaching.by_time) cuts.push_back(end_time(share_a, hazard_ratio, f));
  std::vector<std::pair<double, bool>> times(std::size_t(n_a + n_b));
  int rejected = 0;
  for (int s = 0; s < studies; ++s) {
    // The same draws for every ratio (common random numbers): the power is
    // then a smooth function of the ratio, which the searches below need.
    Rng rng = Rng::stream(kSeed, std::uint64_t(s));
    for (std::size_t i = 0; i < times.size(); ++i) {
      const bool in_a = std::int64_t(i) < n_a;
      const double exponential = -std::log1p(-rng.uniform());
      double t = in_a ? exponential : exponential / hazard_ratio;
      if (t >= end) {
        t = std::numeric_limits<double>::infinity();
      } else if (!cuts.empty()) {
        t = double(std::lower_bound(cuts.begin(), cuts.end(), t) - cuts.begin());
      }
      times[i] = {t, in_a};
    }
    rejected += logrank_chi2(times, n_a) > critical;
  }
  return double(rejected) / double(studies);
}

double logrank_detectable_hazard_ratio_simulated(std::int64_t n_a, std::int64_t n_b, const Reaching& reaching,
                                                 double alpha, double power, int studies) {
  check_design(n_a, n_b, reaching, alpha, studies);
  const auto detects = [&](double log_ratio) {
    return logrank_power_simulated(n_a, n_b, std::exp(log_ratio), reaching, alpha, studies) >= power;
  };
  double lo = 0, hi = std::log(kLargestRatio);
  if (!detects(hi)) return std::numeric_limits<double>::infinity();
  while (hi - lo > 1e-3) {  // a ratio to 0.1 %, more than the simulation's error
    const double mid = (lo + hi) / 2;
    (detects(mid) ? hi : lo) = mid;
  }
  return std::exp(hi);
}

std::int64_t logrank_runs_needed_simulated(double hazard_ratio, const Reaching& reaching, double alpha, double power,
                                           int studies) {
  if (!(hazard_ratio > 0) || hazard_ratio == 1 || !std::isfinite(hazard_ratio)) {
    throw UsageError("the hazard ratio must be > 0 and not 1");
  }
  check_goal(reaching, alpha, studies);
  // Equal groups: R and 1/R are the same design with the groups' names swapped.
  const double ratio = std::max(hazard_ratio, 1 / hazard_ratio);
  const auto detects = [&](std::int64_t n) {
    return logrank_power_simulated(n, n, ratio, reaching, alpha, studies) >= power;
  };
  // Schoenfeld's count, optimistic for few events and for ties, is where the search starts (2 runs a group at least).
  const double events = logrank_events_needed(ratio, 0.5, alpha, power);
  std::int64_t lo = 1, hi = std::max<std::int64_t>(2, std::int64_t(std::ceil(events / reaching.reached / 2)));
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

namespace {

// (z_(1-alpha/2) + z_power)^2 / (share (1 - share)): D ln(HR)^2 (Schoenfeld).
double schoenfeld_term(double share, double alpha, double power) {
  if (!(share > 0 && share < 1)) throw UsageError("the log-rank power needs runs in both groups");
  const boost::math::normal z;
  const double sum = boost::math::quantile(z, 1 - alpha / 2) + boost::math::quantile(z, power);
  return sum * sum / (share * (1 - share));
}

}  // namespace

double logrank_detectable_hazard_ratio(double events, double share, double alpha, double power) {
  if (!(events > 0)) throw UsageError("the log-rank power needs runs that reached the goal");
  return std::exp(std::sqrt(schoenfeld_term(share, alpha, power) / events));
}

double logrank_events_needed(double hazard_ratio, double share, double alpha, double power) {
  if (!(hazard_ratio > 0) || hazard_ratio == 1 || !std::isfinite(hazard_ratio)) {
    throw UsageError("the hazard ratio must be > 0 and not 1");
  }
  const double log_hr = std::log(hazard_ratio);
  return schoenfeld_term(share, alpha, power) / (log_hr * log_hr);
}

}  // namespace dpstudy::stats
