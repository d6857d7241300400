// Describing a group, and the tests that compare two: Welch's t, its interval
// and equivalence test, the paired t, Mann-Whitney U and Wilcoxon.
#include "dpstudy/stats.hpp"

#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "basics.hpp"
#include "dpstudy/error.hpp"

namespace bm = boost::math;

namespace dpstudy::stats {
namespace detail {

double mean_of(const std::vector<double>& x) { return std::accumulate(x.begin(), x.end(), 0.0) / double(x.size()); }

double var_of(const std::vector<double>& x) {  // ddof = 1
  const double m = mean_of(x);
  double s = 0;
  for (double v : x) s += (v - m) * (v - m);
  return s / double(x.size() - 1);
}

void need(std::size_t n, std::size_t at_least, const char* test) {
  if (n < at_least) {
    throw UsageError(std::string(test) + " needs at least " + std::to_string(at_least) +
                     (at_least == 1 ? " value" : " values") + " per group, got " + std::to_string(n));
  }
}

// Average ranks (1-based) of the pooled values; `tie_term` gets sum(t^3 - t).
std::vector<double> ranks(const std::vector<double>& x, double* tie_term) {
  std::vector<std::size_t> idx(x.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](auto a, auto b) { return x[a] < x[b]; });
  std::vector<double> r(x.size());
  double ties = 0;
  for (std::size_t i = 0; i < idx.size();) {
    std::size_t j = i;
    while (j + 1 < idx.size() && x[idx[j + 1]] == x[idx[i]]) ++j;
    const double avg = (double(i) + double(j)) / 2.0 + 1.0;
    for (std::size_t k = i; k <= j; ++k) r[idx[k]] = avg;
    const double t = double(j - i + 1);
    ties += t * t * t - t;
    i = j + 1;
  }
  if (tie_term) *tie_term = ties;
  return r;
}

}  // namespace detail

using namespace detail;

namespace {

double t_two_sided(double t, double df) {
  if (std::isnan(t)) return kNaN;
  if (std::isinf(t)) return 0.0;
  return 2 * bm::cdf(bm::complement(bm::students_t(df), std::fabs(t)));
}

// Welch's standard error of mean(a) - mean(b) and its Welch-Satterthwaite df.
struct WelchSe {
  double se, df;
};
WelchSe welch_se(const std::vector<double>& a, const std::vector<double>& b) {
  const double va = var_of(a) / double(a.size()), vb = var_of(b) / double(b.size());
  return {std::sqrt(va + vb),
          (va + vb) * (va + vb) / (va * va / double(a.size() - 1) + vb * vb / double(b.size() - 1))};
}

}  // namespace

Describe describe(const std::vector<double>& x, double confidence) {
  Describe d;
  d.n = std::int64_t(x.size());
  if (x.empty()) {
    d.mean = d.sd = d.sem = d.ci_low = d.ci_high = d.median = d.min = d.max = kNaN;
    return d;
  }
  std::vector<double> s = x;
  std::sort(s.begin(), s.end());
  d.mean = mean_of(x);
  d.min = s.front();
  d.max = s.back();
  d.median = s.size() % 2 ? s[s.size() / 2] : (s[s.size() / 2 - 1] + s[s.size() / 2]) / 2;
  if (x.size() < 2) {
    d.sd = d.sem = d.ci_low = d.ci_high = kNaN;
    return d;
  }
  d.sd = std::sqrt(var_of(x));
  d.sem = d.sd / std::sqrt(double(x.size()));
  const double t = bm::quantile(bm::students_t(double(x.size() - 1)), 0.5 + confidence / 2);
  d.ci_low = d.mean - t * d.sem;
  d.ci_high = d.mean + t * d.sem;
  return d;
}

Test welch_t(const std::vector<double>& a, const std::vector<double>& b) {
  need(std::min(a.size(), b.size()), 2, "Welch's t-test");
  const auto [se, df] = welch_se(a, b);
  const double t = (mean_of(a) - mean_of(b)) / se;
  return {t, df, se == 0 ? kNaN : t_two_sided(t, df), kNaN};
}

DiffInterval welch_interval(const std::vector<double>& a, const std::vector<double>& b, double confidence) {
  need(std::min(a.size(), b.size()), 2, "the interval of a difference");
  if (!(confidence > 0 && confidence < 1)) throw UsageError("an interval's confidence must be in (0, 1)");
  const auto [se, df] = welch_se(a, b);
  const double d = mean_of(a) - mean_of(b);
  if (se == 0) return {d, d, d, kNaN};
  const double half = bm::quantile(bm::students_t(df), 0.5 + confidence / 2) * se;
  return {d, d - half, d + half, df};
}

Equivalence welch_tost(const std::vector<double>& a, const std::vector<double>& b, double margin, double alpha) {
  need(std::min(a.size(), b.size()), 2, "the equivalence test");
  if (!(margin > 0) || !std::isfinite(margin)) throw UsageError("the equivalence margin must be > 0");
  if (!(alpha > 0 && alpha < 0.5)) throw UsageError("the equivalence test's alpha must be in (0, 0.5)");
  const auto [se, df] = welch_se(a, b);
  const double d = mean_of(a) - mean_of(b);
  if (se == 0) return {d, d, d, kNaN, kNaN};
  const bm::students_t t(df);
  const double above_low = bm::cdf(bm::complement(t, (d + margin) / se));  // H0: d <= -margin
  const double below_high = bm::cdf(t, (d - margin) / se);                // H0: d >= +margin
  const double half = bm::quantile(t, 1 - alpha) * se;
  return {d, d - half, d + half, df, std::max(above_low, below_high)};
}

Test paired_t(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) throw UsageError("paired t-test: the groups differ in size");
  need(a.size(), 2, "the paired t-test");
  std::vector<double> d(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) d[i] = a[i] - b[i];
  const double sd = std::sqrt(var_of(d));
  const double t = mean_of(d) / (sd / std::sqrt(double(d.size())));
  const double df = double(d.size() - 1);
  return {t, df, sd == 0 ? kNaN : t_two_sided(t, df), kNaN};
}

Test mann_whitney_u(const std::vector<double>& a, const std::vector<double>& b) {
  need(std::min(a.size(), b.size()), 1, "the Mann-Whitney U test");
  const auto n1 = std::int64_t(a.size()), n2 = std::int64_t(b.size());
  std::vector<double> all = a;
  all.insert(all.end(), b.begin(), b.end());
  double tie_term = 0;
  const std::vector<double> r = ranks(all, &tie_term);
  const double r1 = std::accumulate(r.begin(), r.begin() + n1, 0.0);
  const double u1 = r1 - double(n1) * double(n1 + 1) / 2;
  const double u = std::max(u1, double(n1) * double(n2) - u1);
  const bool has_ties = tie_term > 0;
  double p;
  if ((n1 > 8 && n2 > 8) || has_ties) {
    const double n = double(n1 + n2);
    const double s = std::sqrt(double(n1) * double(n2) / 12 * ((n + 1) - tie_term / (n * (n - 1))));
    const double z = (u - double(n1) * double(n2) / 2 - 0.5) / s;
    p = 2 * bm::cdf(bm::complement(bm::normal(), z));
  } else {
    // Exact: the number of arrangements with each U, by the usual recursion
    // c(i, j, u) = c(i - 1, j, u - j) + c(i, j - 1, u), kept as a table over u.
    const std::int64_t max_u = n1 * n2;
    std::vector<std::vector<double>> prev(std::size_t(n2 + 1), std::vector<double>(std::size_t(max_u + 1), 0));
    for (std::int64_t j = 0; j <= n2; ++j) prev[std::size_t(j)][0] = 1;  // i = 0
    for (std::int64_t i = 1; i <= n1; ++i) {
      std::vector<std::vector<double>> cur(std::size_t(n2 + 1), std::vector<double>(std::size_t(max_u + 1), 0));
      cur[0][0] = 1;
      for (std::int64_t j = 1; j <= n2; ++j) {
        for (std::int64_t v = 0; v <= max_u; ++v) {
          double c = cur[std::size_t(j - 1)][std::size_t(v)];
          if (v - j >= 0) c += prev[std::size_t(j)][std::size_t(v - j)];
          cur[std::size_t(j)][std::size_t(v)] = c;
        }
      }
      prev = std::move(cur);
    }
    const std::vector<double>& counts = prev[std::size_t(n2)];
    const double total = std::accumulate(counts.begin(), counts.end(), 0.0);
    double tail = 0;
    for (std::int64_t v = std::int64_t(u); v <= max_u; ++v) tail += counts[std::size_t(v)];
    p = 2 * tail / total;
  }
  return {u1, kNaN, std::min(1.0, std::max(0.0, p)), kNaN};
}

Test wilcoxon(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) throw UsageError("Wilcoxon signed-rank test: the groups differ in size");
  std::vector<double> d;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] - b[i] != 0) d.push_back(a[i] - b[i]);
  }
  const bool zeros = d.size() != a.size();
  if (d.empty()) throw UsageError("Wilcoxon signed-rank test: every difference is zero");
  std::vector<double> absd(d.size());
  for (std::size_t i = 0; i < d.size(); ++i) absd[i] = std::fabs(d[i]);
  double tie_term = 0;
  const std::vector<double> r = ranks(absd, &tie_term);
  double r_plus = 0, r_minus = 0;
  for (std::size_t i = 0; i < d.size(); ++i) (d[i] > 0 ? r_plus : r_minus) += r[i];
  const double t = std::min(r_plus, r_minus);
  const auto n = std::int64_t(d.size());
  double p;
  if (n <= 50 && !zeros) {
    // Exact: counts of subsets of ranks 1..n by their sum.
    const std::int64_t max_sum = n * (n + 1) / 2;
    std::vector<double> counts(std::size_t(max_sum + 1), 0);
    counts[0] = 1;
    for (std::int64_t k = 1; k <= n; ++k) {
      for (std::int64_t s = max_sum; s >= k; --s) counts[std::size_t(s)] += counts[std::size_t(s - k)];
    }
    const double total = std::pow(2.0, double(n));
    const auto rp = std::int64_t(r_plus);  // as scipy: ties make the exact distribution approximate
    if (rp == max_sum / 2 && max_sum % 2 == 0) {
      p = 1.0;
    } else {
      double less = 0, greater = 0;
      for (std::int64_t s = 0; s <= rp; ++s) less += counts[std::size_t(s)];
      for (std::int64_t s = rp; s <= max_sum; ++s) greater += counts[std::size_t(s)];
      p = 2 * std::min(less, greater) / total;
    }
  } else {
    const double nn = double(n);
    const double mn = nn * (nn + 1) / 4;
    const double se = std::sqrt((nn * (nn + 1) * (2 * nn + 1) - 0.5 * tie_term) / 24);
    const double z = (t - mn) / se;
    p = 2 * bm::cdf(bm::complement(bm::normal(), std::fabs(z)));
  }
  return {t, kNaN, std::min(1.0, std::max(0.0, p)), kNaN};
}

}  // namespace dpstudy::stats
