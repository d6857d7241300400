// Reads test cases from stdin, one per line: NAME;group;group;... with each
// group comma-separated numbers, and prints "statistic p" per line (holm: the
// adjusted p-values; factorial and tost: see below). Used by test_stats_vs_scipy.py.
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "dpstudy/stats.hpp"

using namespace dpstudy::stats;

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    std::stringstream in(line);
    std::string name, part;
    std::getline(in, name, ';');
    std::vector<std::vector<double>> g;
    while (std::getline(in, part, ';')) {
      std::vector<double> v;
      std::stringstream values(part);
      for (std::string x; std::getline(values, x, ',');) v.push_back(std::stod(x));
      g.push_back(v);
    }
    if (name == "factorial") {  // y;levels of factor 0;levels of factor 1;...: "ss df F p" per term, then residual ss df
      std::vector<std::vector<int>> levels;
      for (std::size_t f = 1; f < g.size(); ++f) levels.emplace_back(g[f].begin(), g[f].end());
      const FactorialAnova a = factorial_anova(g[0], levels);
      for (const AnovaTerm& t : a.terms) std::printf("%.17g %.17g %.17g %.17g ", t.ss, t.df, t.f, t.p);
      std::printf("%.17g %.17g\n", a.residual_ss, a.residual_df);
      continue;
    }
    if (name == "tost_power") {  // m;n: "power needed_n" (alpha 0.05, power 0.8)
      const double m = g[0].at(0);
      std::printf("%.17g %lld\n", tost_power(m, std::int64_t(g[1].at(0))),
                  static_cast<long long>(tost_samples_needed(m)));
      continue;
    }
    if (name == "logrank_power") {  // events;share: "detectable_hazard_ratio events_needed_for_it" (0.05, 0.8)
      const double hr = logrank_detectable_hazard_ratio(g[0].at(0), g[1].at(0));
      std::printf("%.17g %.17g\n", hr, logrank_events_needed(hr, g[1].at(0)));
      continue;
    }
    if (name == "logrank_power_simulated") {  // n_a;n_b;reached[;fractions by time]: "detectable_hazard_ratio power"
      const auto n_a = std::int64_t(g[0].at(0)), n_b = std::int64_t(g[1].at(0));
      const Reaching reaching{g[2].at(0), g.size() > 3 ? g[3] : std::vector<double>{}};
      const double hr = logrank_detectable_hazard_ratio_simulated(n_a, n_b, reaching);
      std::printf("%.17g %.17g\n", hr, logrank_power_simulated(n_a, n_b, hr, reaching));
      continue;
    }
    if (name == "welch_interval") {  // a;b;confidence: "diff low high df"
      const DiffInterval d = welch_interval(g[0], g[1], g[2].at(0));
      std::printf("%.17g %.17g %.17g %.17g\n", d.diff, d.low, d.high, d.df);
      continue;
    }
    if (name == "critical_batch") {  // batch;steps;confidence: "b_crit s_min low high df" (NaN without a fit)
      const CriticalBatch c = critical_batch(g[0], g[1], g[2].at(0));
      std::printf("%.17g %.17g %.17g %.17g %.17g\n", c.b_crit, c.s_min, c.low, c.high, c.df);
      continue;
    }
    if (name == "logrank") {  // time;event;time;event;... (a group's times, then its 0/1 events): "chi2 p df"
      std::vector<Censored> groups;
      for (std::size_t i = 0; i + 1 < g.size(); i += 2) groups.push_back({g[i], std::vector<bool>(g[i + 1].begin(), g[i + 1].end())});
      const Test t = logrank(groups);
      std::printf("%.17g %.17g %.17g\n", t.statistic, t.p, t.df);
      continue;
    }
    if (name == "kaplan_meier") {  // time;event: "t1 t2 ... | s1 s2 ... | se1 se2 ..."
      const Survival k = kaplan_meier({g[0], std::vector<bool>(g[1].begin(), g[1].end())});
      for (double t : k.time) std::printf("%.17g ", t);
      std::printf("|");
      for (double v : k.survival) std::printf(" %.17g", v);
      std::printf(" |");
      for (double v : k.se) std::printf(" %.17g", v);
      std::printf("\n");
      continue;
    }
    if (name == "km_quantile") {  // time;event;p;confidence: "value low high"
      const SurvivalQuantile q = km_quantile({g[0], std::vector<bool>(g[1].begin(), g[1].end())}, g[2].at(0), g[3].at(0));
      std::printf("%.17g %.17g %.17g\n", q.value, q.low, q.high);
      continue;
    }
    if (name == "tost") {  // a;b;margin[;alpha]: "df p ci_low ci_high" (the 1 - 2 alpha interval)
      const Equivalence e = welch_tost(g[0], g[1], g[2].at(0), g.size() > 3 ? g[3].at(0) : 0.05);
      std::printf("%.17g %.17g %.17g %.17g\n", e.df, e.p, e.ci_low, e.ci_high);
      continue;
    }
    Test t{};
    if (name == "ttest_ind") t = welch_t(g[0], g[1]);
    else if (name == "ttest_rel") t = paired_t(g[0], g[1]);
    else if (name == "mannwhitneyu") t = mann_whitney_u(g[0], g[1]);
    else if (name == "wilcoxon") t = wilcoxon(g[0], g[1]);
    else if (name == "f_oneway") t = anova(g);
    else if (name == "welch_anova") t = welch_anova(g);
    else if (name == "kruskal") t = kruskal(g);
    else if (name == "holm") {
      for (double p : holm(g[0])) std::printf("%.17g ", p);
      std::printf("\n");
      continue;
    } else {
      std::fprintf(stderr, "unknown test %s\n", name.c_str());
      return 2;
    }
    std::printf("%.17g %.17g %.17g %.17g\n", t.statistic, t.p, t.df, t.df2);
  }
  return 0;
}
