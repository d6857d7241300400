// The factorial ANOVA (Type II sums of squares) by least squares on indicator
// columns: each term tested after every term that does not contain it.
#include <boost/math/distributions/fisher_f.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "basics.hpp"
#include "dpstudy/error.hpp"
#include "dpstudy/stats.hpp"

namespace bm = boost::math;

namespace dpstudy::stats {

using detail::kNaN;

namespace {

// Residual sum of squares and rank of the least-squares fit of y on the
// columns (modified Gram-Schmidt, applied twice for accuracy; a column whose
// remainder is below 1e-10 of its norm adds nothing: it is a combination of the others).
std::pair<double, int> least_squares(std::vector<std::vector<double>> columns, std::vector<double> y) {
  std::vector<std::vector<double>> basis;
  const auto dot = [](const std::vector<double>& a, const std::vector<double>& b) {
    return std::inner_product(a.begin(), a.end(), b.begin(), 0.0);
  };
  for (auto& c : columns) {
    const double norm = std::sqrt(dot(c, c));
    if (norm == 0) continue;
    for (int pass = 0; pass < 2; ++pass) {
      for (const auto& q : basis) {
        const double d = dot(q, c);
        for (std::size_t i = 0; i < c.size(); ++i) c[i] -= d * q[i];
      }
    }
    const double rest = std::sqrt(dot(c, c));
    if (rest <= 1e-10 * norm) continue;
    for (double& v : c) v /= rest;
    basis.push_back(std::move(c));
  }
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& q : basis) {
      const double d = dot(q, y);
      for (std::size_t i = 0; i < y.size(); ++i) y[i] -= d * q[i];
    }
  }
  return {dot(y, y), int(basis.size())};
}

}  // namespace

FactorialAnova factorial_anova(const std::vector<double>& y, const std::vector<std::vector<int>>& levels) {
  const std::size_t n = y.size(), k = levels.size();
  if (k == 0 || k > 6) throw UsageError("a factorial ANOVA takes 1 to 6 factors");
  // Each factor's sum-to-zero columns: level j < L-1 is column j, the last level -1 in every column.
  std::vector<std::vector<std::vector<double>>> coded(k);
  for (std::size_t f = 0; f < k; ++f) {
    if (levels[f].size() != n) throw UsageError("factorial ANOVA: a factor's levels do not match the values");
    std::vector<int> distinct(levels[f]);
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    for (std::size_t j = 0; j + 1 < distinct.size(); ++j) {
      std::vector<double> c(n);
      for (std::size_t i = 0; i < n; ++i) {
        c[i] = levels[f][i] == distinct[j] ? 1.0 : levels[f][i] == distinct.back() ? -1.0 : 0.0;
      }
      coded[f].push_back(std::move(c));
    }
  }
  // Terms: the non-empty subsets of the factors, by size, then in order.
  std::vector<unsigned> subsets;
  for (unsigned m = 1; m < (1u << k); ++m) subsets.push_back(m);
  std::stable_sort(subsets.begin(), subsets.end(),
                   [](unsigned a, unsigned b) { return __builtin_popcount(a) < __builtin_popcount(b); });
  // A term's columns: products of one column of each of its factors.
  const auto columns_of = [&](unsigned term) {
    std::vector<std::vector<double>> out{std::vector<double>(n, 1.0)};
    for (std::size_t f = 0; f < k; ++f) {
      if (!(term & (1u << f))) continue;
      std::vector<std::vector<double>> next;
      for (const auto& a : out) {
        for (const auto& b : coded[f]) {
          std::vector<double> c(n);
          for (std::size_t i = 0; i < n; ++i) c[i] = a[i] * b[i];
          next.push_back(std::move(c));
        }
      }
      out = std::move(next);
    }
    return out;
  };
  const double mean = std::accumulate(y.begin(), y.end(), 0.0) / double(std::max<std::size_t>(n, 1));
  std::vector<double> centred(y);
  for (double& v : centred) v -= mean;  // the intercept's part, removed first for accuracy
  const auto fit = [&](const std::vector<unsigned>& terms) {
    std::vector<std::vector<double>> cols{std::vector<double>(n, 1.0)};
    for (unsigned t : terms) {
      for (auto& c : columns_of(t)) cols.push_back(std::move(c));
    }
    return least_squares(std::move(cols), centred);
  };
  FactorialAnova out{};
  const auto [rss, rank] = fit(subsets);
  out.residual_ss = rss;
  out.residual_df = double(n) - double(rank);
  for (unsigned t : subsets) {
    std::vector<unsigned> without;  // every term that does not contain t
    for (unsigned u : subsets) {
      if ((u & t) != t) without.push_back(u);
    }
    const auto [rss0, rank0] = fit(without);
    without.push_back(t);
    const auto [rss1, rank1] = fit(without);
    AnovaTerm term{};
    for (std::size_t f = 0; f < k; ++f) {
      if (t & (1u << f)) term.factors.push_back(int(f));
    }
    term.df = double(rank1 - rank0);
    term.ss = term.df > 0 ? std::max(0.0, rss0 - rss1) : kNaN;
    term.f = term.p = kNaN;
    if (term.df > 0 && out.residual_df > 0 && out.residual_ss > 0) {
      term.f = (term.ss / term.df) / (out.residual_ss / out.residual_df);
      term.p = bm::cdf(bm::complement(bm::fisher_f(term.df, out.residual_df), term.f));
    }
    term.partial_eta_sq = term.df > 0 && term.ss + out.residual_ss > 0 ? term.ss / (term.ss + out.residual_ss) : kNaN;
    out.terms.push_back(term);
  }
  return out;
}

}  // namespace dpstudy::stats
