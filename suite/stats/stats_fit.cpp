// The critical batch size's fit and its interval (docs/analysis.md#steps-to-result).
#include "dpstudy/stats.hpp"

#include <boost/math/distributions/students_t.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "basics.hpp"
#include "dpstudy/error.hpp"

namespace dpstudy::stats {

using detail::kNaN;

RatioInterval fieller_interval(double num, double den, double var_num, double var_den, double cov, double df,
                               double confidence) {
  if (!(confidence > 0 && confidence < 1)) throw UsageError("an interval's confidence must be in (0, 1)");
  const double inf = std::numeric_limits<double>::infinity();
  if (!(df > 0)) return {-inf, inf};
  const double t = boost::math::quantile(boost::math::students_t(df), 0.5 + confidence / 2), t2 = t * t;
  // The ratios r with (num - r den)^2 <= t^2 (var_num - 2 r cov + r^2 var_den): r^2 qa - 2 r qb + qc <= 0.
  const double qa = den * den - t2 * var_den, qb = num * den - t2 * cov, qc = num * num - t2 * var_num;
  // den within its own interval of 0: the set is unbounded (the whole line, or all but an interval).
  if (!(qa > 0)) return {-inf, inf};
  const double disc = qb * qb - qa * qc;
  const double half = std::sqrt(std::max(disc, 0.0));
  return {(qb - half) / qa, (qb + half) / qa};
}

CriticalBatch critical_batch(const std::vector<double>& batch, const std::vector<double>& steps, double confidence) {
  CriticalBatch c{kNaN, kNaN, kNaN, kNaN, kNaN, {}};
  // Least squares of the relative error: the line steps = a + b x, x = 1 / batch, weights 1 / steps^2.
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  std::vector<double> w, x, y;
  for (std::size_t i = 0; i < batch.size() && i < steps.size(); ++i) {
    if (!(batch[i] > 0) || !(steps[i] > 0) || !std::isfinite(steps[i])) continue;
    w.push_back(1 / (steps[i] * steps[i]));
    x.push_back(1 / batch[i]);
    y.push_back(steps[i]);
    sw += w.back();
    sx += w.back() * x.back();
    sy += w.back() * y.back();
    sxx += w.back() * x.back() * x.back();
    sxy += w.back() * x.back() * y.back();
  }
  const std::size_t n = w.size();
  if (n < 3) {
    c.why_not = std::to_string(n) + " batch size(s) reached the target, the fit needs 3";
    return c;
  }
  const double det = sw * sxx - sx * sx;
  if (!(det > 0)) {
    c.why_not = "the batch sizes do not differ";
    return c;
  }
  const double b = (sw * sxy - sx * sy) / det, a = (sy - b * sx) / sw;
  if (!(a > 0)) {
    c.why_not = "the steps fall faster than 1 / B: no positive S_min";
    return c;
  }
  if (!(b > 0)) {
    c.why_not = "the steps do not fall as the batch grows";
    return c;
  }
  c.b_crit = b / a;
  c.s_min = a;
  // The residuals' variance with n - 2 df scales (X'WX)^-1 into the covariance of (a, b).
  double rss = 0;
  for (std::size_t i = 0; i < n; ++i) rss += w[i] * (y[i] - a - b * x[i]) * (y[i] - a - b * x[i]);
  c.df = double(n - 2);
  const double s2 = rss / c.df;
  const RatioInterval r = fieller_interval(b, a, s2 * sw / det, s2 * sxx / det, -s2 * sx / det, c.df, confidence);
  c.low = r.low;
  c.high = r.high;
  return c;
}

}  // namespace dpstudy::stats
