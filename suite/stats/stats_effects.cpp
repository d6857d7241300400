// Effect sizes, power and sample sizes of the t tests and TOST, the Holm
// correction, and the marks of significance.
#include <boost/math/distributions/beta.hpp>
#include <boost/math/distributions/chi_squared.hpp>
#include <boost/math/distributions/non_central_t.hpp>
#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>
#include <boost/math/quadrature/gauss.hpp>
#include <boost/math/quadrature/gauss_kronrod.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "basics.hpp"
#include "dpstudy/error.hpp"
#include "dpstudy/stats.hpp"

namespace bm = boost::math;
namespace bmq = boost::math::quadrature;

namespace dpstudy::stats {

using namespace detail;

std::vector<double> holm(const std::vector<double>& p) {
  std::vector<std::size_t> idx(p.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](auto a, auto b) { return p[a] < p[b]; });
  std::vector<double> out(p.size(), kNaN);
  double running = 0;
  const double m = double(p.size());
  for (std::size_t rank = 0; rank < idx.size(); ++rank) {
    const double v = p[idx[rank]];
    if (std::isnan(v)) continue;
    running = std::max(running, std::min(1.0, (m - double(rank)) * v));
    out[idx[rank]] = running;
  }
  return out;
}

Effect hedges_g(const std::vector<double>& a, const std::vector<double>& b, double confidence) {
  need(std::min(a.size(), b.size()), 2, "Hedges' g");
  const double n1 = double(a.size()), n2 = double(b.size());
  const double sp = std::sqrt(((n1 - 1) * var_of(a) + (n2 - 1) * var_of(b)) / (n1 + n2 - 2));
  if (sp == 0) return {kNaN, kNaN, kNaN};
  const double j = 1 - 3 / (4 * (n1 + n2) - 9);
  const double g = j * (mean_of(a) - mean_of(b)) / sp;
  const double se = std::sqrt((n1 + n2) / (n1 * n2) + g * g / (2 * (n1 + n2)));
  const double z = bm::quantile(bm::normal(), 0.5 + confidence / 2);
  return {g, g - z * se, g + z * se};
}

double power_two_sample(double d, std::int64_t n1, std::int64_t n2, double alpha) {
  const double df = double(n1 + n2 - 2);
  const double ncp = d * std::sqrt(double(n1) * double(n2) / double(n1 + n2));
  const double crit = bm::quantile(bm::students_t(df), 1 - alpha / 2);
  const bm::non_central_t nct(df, ncp);
  return bm::cdf(bm::complement(nct, crit)) + bm::cdf(nct, -crit);
}

double detectable_effect(std::int64_t n1, std::int64_t n2, double alpha, double power) {
  if (n1 < 2 || n2 < 2) throw UsageError("power analysis needs at least 2 runs per group");
  double lo = 0, hi = 1;
  while (power_two_sample(hi, n1, n2, alpha) < power) hi *= 2;
  for (int i = 0; i < 60; ++i) {
    const double mid = (lo + hi) / 2;
    (power_two_sample(mid, n1, n2, alpha) < power ? lo : hi) = mid;
  }
  return hi;
}

std::int64_t samples_needed(double d, double alpha, double power) {
  if (!(d > 0)) throw UsageError("the effect size must be > 0");
  for (std::int64_t n = 2; n < 1000000; ++n) {
    if (power_two_sample(d, n, n, alpha) >= power) return n;
  }
  return -1;
}

double tost_power(double m, std::int64_t n, double alpha) {
  // Exact for the test compare runs (Welch's TOST, n runs per group, a true
  // difference of 0). In units of sd sqrt(2 / n), with nu = n - 1: the
  // difference is Z ~ N(0, 1); the standard error is sqrt(S / (2 nu)) with S the
  // sum of the two groups' chi-square(nu) variances, S ~ chi-square(2 nu); and
  // Welch's df is nu / (U^2 + (1 - U)^2) with U = (first group's share of S) ~
  // Beta(nu / 2, nu / 2), independent of S. Both one-sided tests reject when
  // |Z| < delta - t(df) sqrt(S / (2 nu)), delta = m sqrt(n / 2), so for a given U
  // the power is 2 * integral over z in [0, delta] of phi(z) F_S(2 nu ((delta - z) / t)^2),
  // averaged over U through its quantiles (U and 1 - U give the same df).
  if (n < 2 || !(m > 0)) return 0;
  const double nu = double(n - 1), delta = m * std::sqrt(double(n) / 2);
  const bm::chi_squared s_dist(2 * nu);
  const bm::beta_distribution<double> u_dist(nu / 2, nu / 2);
  const bm::normal z_dist;
  const double z_end = std::min(delta, 9.0);  // phi beyond 9 adds under 1e-18
  const auto given_share = [&](double p) {
    const double u = bm::quantile(u_dist, p);
    const double t = bm::quantile(bm::students_t(nu / (u * u + (1 - u) * (1 - u))), 1 - alpha);
    const auto at_z = [&](double z) {
      const double r = (delta - z) / t;
      return bm::pdf(z_dist, z) * bm::cdf(s_dist, 2 * nu * r * r);
    };
    return 2 * bmq::gauss_kronrod<double, 31>::integrate(at_z, 0.0, z_end, 15, 1e-10);
  };
  const double power = 2 * bmq::gauss<double, 30>::integrate(given_share, 0.0, 0.5);
  return std::clamp(power, 0.0, 1.0);
}

std::int64_t tost_samples_needed(double m, double alpha, double power) {
  if (!(m > 0) || !std::isfinite(m)) throw UsageError("the equivalence margin must be > 0");
  std::int64_t hi = 2;  // power grows with n: double, then bisect
  while (tost_power(m, hi, alpha) < power) {
    if (hi > 10000000) return -1;
    hi *= 2;
  }
  if (hi == 2) return 2;
  std::int64_t lo = hi / 2;  // short of the power, as the loop found
  while (hi - lo > 1) {
    const std::int64_t mid = (lo + hi) / 2;
    (tost_power(m, mid, alpha) < power ? lo : hi) = mid;
  }
  return hi;
}

std::string significance(double p) {
  if (std::isnan(p)) return "-";
  return p < 0.001 ? "***" : p < 0.01 ? "**" : p < 0.05 ? "*" : "ns";
}

}  // namespace dpstudy::stats
