// The tests that compare k groups: the one-way ANOVA, Welch's ANOVA and Kruskal-Wallis.
#include <boost/math/distributions/chi_squared.hpp>
#include <boost/math/distributions/fisher_f.hpp>

#include <cstddef>
#include <numeric>
#include <vector>

#include "basics.hpp"
#include "dpstudy/error.hpp"
#include "dpstudy/stats.hpp"

namespace bm = boost::math;

namespace dpstudy::stats {

using namespace detail;

Test anova(const std::vector<std::vector<double>>& groups) {
  if (groups.size() < 2) throw UsageError("ANOVA needs at least 2 groups");
  double n = 0, grand = 0;
  for (const auto& g : groups) {
    need(g.size(), 1, "ANOVA");
    n += double(g.size());
    grand += std::accumulate(g.begin(), g.end(), 0.0);
  }
  grand /= n;
  double ssb = 0, ssw = 0;
  for (const auto& g : groups) {
    const double m = mean_of(g);
    ssb += double(g.size()) * (m - grand) * (m - grand);
    for (double v : g) ssw += (v - m) * (v - m);
  }
  const double df1 = double(groups.size() - 1), df2 = n - double(groups.size());
  if (df2 < 1) throw UsageError("ANOVA needs more values than groups");
  const double f = (ssb / df1) / (ssw / df2);
  const double p = ssw == 0 ? kNaN : bm::cdf(bm::complement(bm::fisher_f(df1, df2), f));
  return {f, df1, p, df2};
}

Test welch_anova(const std::vector<std::vector<double>>& groups) {
  if (groups.size() < 2) throw UsageError("Welch's ANOVA needs at least 2 groups");
  const double k = double(groups.size());
  std::vector<double> w, m, n;
  for (const auto& g : groups) {
    need(g.size(), 2, "Welch's ANOVA");
    const double v = var_of(g);
    if (v == 0) return {kNaN, k - 1, kNaN, kNaN};
    w.push_back(double(g.size()) / v);
    m.push_back(mean_of(g));
    n.push_back(double(g.size()));
  }
  const double sw = std::accumulate(w.begin(), w.end(), 0.0);
  double mw = 0;
  for (std::size_t i = 0; i < w.size(); ++i) mw += w[i] * m[i] / sw;
  double a = 0, lambda = 0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    a += w[i] * (m[i] - mw) * (m[i] - mw);
    lambda += (1 - w[i] / sw) * (1 - w[i] / sw) / (n[i] - 1);
  }
  a /= (k - 1);
  const double b = 1 + 2 * (k - 2) / (k * k - 1) * lambda;
  const double f = a / b;
  const double df2 = (k * k - 1) / (3 * lambda);
  return {f, k - 1, bm::cdf(bm::complement(bm::fisher_f(k - 1, df2), f)), df2};
}

Test kruskal(const std::vector<std::vector<double>>& groups) {
  if (groups.size() < 2) throw UsageError("the Kruskal-Wallis test needs at least 2 groups");
  std::vector<double> all;
  for (const auto& g : groups) {
    need(g.size(), 1, "the Kruskal-Wallis test");
    all.insert(all.end(), g.begin(), g.end());
  }
  double tie_term = 0;
  const std::vector<double> r = ranks(all, &tie_term);
  const double n = double(all.size());
  double h = 0;
  std::size_t at = 0;
  for (const auto& g : groups) {
    double sum = 0;
    for (std::size_t i = 0; i < g.size(); ++i) sum += r[at + i];
    at += g.size();
    h += sum * sum / double(g.size());
  }
  h = 12 / (n * (n + 1)) * h - 3 * (n + 1);
  const double correction = 1 - tie_term / (n * n * n - n);
  if (correction == 0) return {kNaN, double(groups.size() - 1), kNaN, kNaN};
  h /= correction;
  const double df = double(groups.size() - 1);
  return {h, df, bm::cdf(bm::complement(bm::chi_squared(df), h)), kNaN};
}

}  // namespace dpstudy::stats
