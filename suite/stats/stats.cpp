#include "dpstudy/stats.hpp"

#include <boost/math/distributions/beta.hpp>
#include <boost/math/distributions/chi_squared.hpp>
#include <boost/math/distributions/fisher_f.hpp>
#include <boost/math/distributions/non_central_t.hpp>
#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>
#include <boost/math/quadrature/gauss.hpp>
#include <boost/math/quadrature/gauss_kronrod.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "dpstudy/error.hpp"

namespace bm = boost::math;
namespace bmq = boost::math::quadrature;

namespace dpstudy::stats {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

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
      throw UsageError("the log-rank test is undefined here: no variance in the events of a group (every run of "
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

namespace {

// (z_(1-alpha/2) + z_power)^2 / (share (1 - share)): D ln(HR)^2 (Schoenfeld).
double schoenfeld_term(double share, double alpha, double power) {
  if (!(share > 0 && share < 1)) throw UsageError("the log-rank power needs runs in both groups");
  const bm::normal z;
  const double sum = bm::quantile(z, 1 - alpha / 2) + bm::quantile(z, power);
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
