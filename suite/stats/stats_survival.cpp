// Censored times to a goal: the log-rank test, the Kaplan-Meier estimate, its
// band and its quantiles.
#include <boost/math/distributions/chi_squared.hpp>
#include <boost/math/distributions/normal.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include "basics.hpp"
#include "dpstudy/error.hpp"
#include "dpstudy/stats.hpp"

namespace bm = boost::math;

namespace dpstudy::stats {

using namespace detail;

Test logrank(const std::vector<Censored>& groups) {
  const std::size_t k = groups.size();
  if (k < 2) throw UsageError("the log-rank test needs at least 2 groups");
  std::vector<double> event_times;
  for (const Censored& g : groups) {
    if (g.time.size() != g.event.size()) throw UsageError("log-rank test: a group's times and events differ in count");
    need(g.time.size(), 1, "the log-rank test");
    for (std::size_t i = 0; i < g.time.size(); ++i) {
      if (g.event[i]) event_times.push_back(g.time[i]);
    }
  }
  if (event_times.empty()) throw UsageError("the log-rank test needs an event in some group (none reached it)");
  std::sort(event_times.begin(), event_times.end());
  event_times.erase(std::unique(event_times.begin(), event_times.end()), event_times.end());
  // Observed minus expected events per group, and their covariance, summed over the event times.
  std::vector<double> o_e(k, 0.0);
  std::vector<std::vector<double>> v(k, std::vector<double>(k, 0.0));
  std::vector<double> at_risk(k), events(k);
  for (const double t : event_times) {
    double n = 0, d = 0;
    for (std::size_t j = 0; j < k; ++j) {
      at_risk[j] = events[j] = 0;
      for (std::size_t i = 0; i < groups[j].time.size(); ++i) {
        if (groups[j].time[i] >= t) ++at_risk[j];
        if (groups[j].time[i] == t && groups[j].event[i]) ++events[j];
      }
      n += at_risk[j];
      d += events[j];
    }
    const double spread = n > 1 ? d * (n - d) / (n - 1) : 0;
    for (std::size_t j = 0; j < k; ++j) {
      o_e[j] += events[j] - at_risk[j] * d / n;
      for (std::size_t l = 0; l < k; ++l) {
        v[j][l] += spread * at_risk[j] / n * ((j == l ? 1.0 : 0.0) - at_risk[l] / n);
      }
    }
  }
  // The k - 1 first groups carry it all (the sums over groups are 0): chi2 = o_e' V^-1 o_e,
  // solved by Gaussian elimination with partial pivoting.
  const std::size_t m = k - 1;
  std::vector<std::vector<double>> a(m, std::vector<double>(m + 1));
  for (std::size_t j = 0; j < m; ++j) {
    for (std::size_t l = 0; l < m; ++l) a[j][l] = v[j][l];
    a[j][m] = o_e[j];
  }
  double scale = 0;
  for (std::size_t j = 0; j < m; ++j) scale = std::max(scale, std::abs(a[j][j]));
  for (std::size_t c = 0; c < m; ++c) {
    std::size_t pivot = c;
    for (std::size_t j = c + 1; j < m; ++j) {
      if (std::abs(a[j][c]) > std::abs(a[pivot][c])) pivot = j;
    }
    if (!(std::abs(a[pivot][c]) > 1e-12 * scale)) {
      throw UsageError(
          "the log-rank test is undefined here: no variance in the events of a group (every run of "
          "a level ended before the first event, or all events at one time)");
    }
    std::swap(a[c], a[pivot]);
    for (std::size_t j = c + 1; j < m; ++j) {
      const double f = a[j][c] / a[c][c];
      for (std::size_t l = c; l <= m; ++l) a[j][l] -= f * a[c][l];
    }
  }
  std::vector<double> x(m);
  for (std::size_t c = m; c-- > 0;) {
    double sum = a[c][m];
    for (std::size_t l = c + 1; l < m; ++l) sum -= a[c][l] * x[l];
    x[c] = sum / a[c][c];
  }
  double chi2 = 0;
  for (std::size_t j = 0; j < m; ++j) chi2 += o_e[j] * x[j];
  const double df = double(m);
  return {chi2, df, bm::cdf(bm::complement(bm::chi_squared(df), std::max(chi2, 0.0))), kNaN};
}

Survival kaplan_meier(const Censored& g) {
  if (g.time.size() != g.event.size()) throw UsageError("Kaplan-Meier: the times and events differ in count");
  std::vector<double> times;
  for (std::size_t i = 0; i < g.time.size(); ++i) {
    if (g.event[i]) times.push_back(g.time[i]);
  }
  std::sort(times.begin(), times.end());
  times.erase(std::unique(times.begin(), times.end()), times.end());
  Survival out;
  double s = 1, greenwood = 0;
  for (const double t : times) {
    double at_risk = 0, events = 0;
    for (std::size_t i = 0; i < g.time.size(); ++i) {
      at_risk += g.time[i] >= t;
      events += g.time[i] == t && g.event[i];
    }
    s *= 1 - events / at_risk;
    greenwood += events < at_risk ? events / (at_risk * (at_risk - events)) : kNaN;
    out.time.push_back(t);
    out.survival.push_back(s);
    out.se.push_back(s * std::sqrt(greenwood));
  }
  return out;
}

SurvivalBand km_band(const Survival& km, double confidence) {
  if (!(confidence > 0 && confidence < 1)) throw UsageError("an interval's confidence must be in (0, 1)");
  const double z = bm::quantile(bm::normal(), 0.5 + confidence / 2);
  SurvivalBand band;
  for (std::size_t i = 0; i < km.time.size(); ++i) {
    const double s = km.survival[i];
    // se of log(-log S) = se(S) / |S log S|; a larger log(-log S) is a smaller S.
    const double spread = z * km.se[i] / std::fabs(s * std::log(s));
    const bool defined = s > 0 && s < 1 && std::isfinite(spread);
    band.low.push_back(defined ? std::pow(s, std::exp(spread)) : s);
    band.high.push_back(defined ? std::pow(s, std::exp(-spread)) : s);
  }
  return band;
}

SurvivalQuantile km_quantile(const Censored& g, double p, double confidence) {
  if (!(p > 0 && p < 1)) throw UsageError("Kaplan-Meier quantile: p must lie between 0 and 1");
  const Survival k = kaplan_meier(g);
  SurvivalQuantile q{kNaN, kNaN, kNaN};
  // S is a step function: where it is flat at exactly 1 - p, the midpoint of the
  // flat, as R's quantile.survfit and the median of uncensored values do. A flat
  // that lasts to the end has no midpoint (R takes the last censored time as its
  // end): the runs censored there ended without the event, which says nothing of
  // when they would have had it.
  const double tolerance = std::sqrt(std::numeric_limits<double>::epsilon());
  for (std::size_t i = 0; i < k.time.size(); ++i) {
    if (k.survival[i] > 1 - p + tolerance) continue;
    if (k.survival[i] >= 1 - p - tolerance) {
      if (i + 1 < k.time.size()) q.value = (k.time[i] + k.time[i + 1]) / 2;
    } else {
      q.value = k.time[i];
    }
    break;
  }
  // z-tests of S(t) = 1 - p at each event time on the cloglog scale, where
  // g(x) = log(-log x) and g'(x) = -1 / (x log x); NaN (S = 0, or no Greenwood
  // variance) is never inside.
  const double z = bm::quantile(bm::normal(), 0.5 + confidence / 2);
  const auto cloglog = [](double x) { return std::log(-std::log(x)); };
  std::size_t first = k.time.size(), last = 0;
  for (std::size_t i = 0; i < k.time.size(); ++i) {
    const double s = k.survival[i];
    const double r = (cloglog(s) - cloglog(1 - p)) / (-1 / (s * std::log(s)) * k.se[i]);
    if (!(std::abs(r) <= z)) continue;
    first = std::min(first, i);
    last = i;
  }
  if (first == k.time.size()) return q;
  q.low = k.time[first];
  q.high = last + 1 < k.time.size() ? k.time[last + 1] : std::numeric_limits<double>::infinity();
  return q;
}

}  // namespace dpstudy::stats
