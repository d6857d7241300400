// dpstudy-analyze curves: eval series averaged over seeds (docs/analysis.md).
// Steps to a result: steps.cpp.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <cstdlib>

#include "dpstudy/hdf5.hpp"
#include "dpstudy/metrics.hpp"
#include "dpstudy/study.hpp"

#include "commands.hpp"
#include "dpstudy/error.hpp"
#include "dpstudy/stats.hpp"

namespace dpstudy::analyze {

std::vector<Curve> curves_of(const Runs& r, const Options& o) {
  if (o.x != "step" && o.x != "epoch" && o.x != "samples" && o.x != "time_s") {
    throw ConfigError("x", o.x, "is not one of: step, epoch, samples, time_s");
  }
  std::vector<Curve> out;
  for (const Group& g : group_runs(r, o.by, o.include_diverged ? Counted::every : Counted::completed)) {
    // Values pooled by x. Against time, by step: no two runs reach a step at the same
    // second, so each evaluation is placed at the mean time its runs reached its step.
    std::map<double, std::vector<double>> at, seconds;  // x (time: step) -> values, times
    for (const Run* run : g.runs) {
      const auto y = series(*run, o.series);
      const auto steps = series(*run, "step");
      std::vector<double> x = o.x == "epoch" ? series(*run, "epoch") : steps;
      if (o.x == "samples") {
        for (auto& v : x) v *= run->numbers.at("workers") * run->numbers.at("batch_size");
      } else if (o.x == "time_s") {
        const auto t = series(*run, "time_s", true);
        for (std::size_t i = 0; i < x.size(); ++i) {
          const double s = time_at_step(*run, t, x[i]);
          if (i < y.size() && std::isfinite(y[i])) seconds[x[i]].push_back(s);
        }
      }
      for (std::size_t i = 0; i < y.size(); ++i) at[x[i]].push_back(y[i]);
    }
    Curve c{g.key_values, g.runs, {}, {}, {}, {}, {}};
    for (const auto& [x, ys] : at) {
      const stats::Describe d = stats::describe(finite(ys));
      if (d.n == 0) continue;  // no run has a value here (e.g. test_every skipped the test split)
      c.x.push_back(o.x == "time_s" ? stats::describe(seconds[x]).mean : x);
      const auto [lo, hi] = interval_ends(d, o.interval);
      c.mean.push_back(d.mean);
      c.lo.push_back(lo);
      c.hi.push_back(hi);
      c.n.push_back(d.n);
    }
    out.push_back(c);
  }
  return out;
}

std::vector<Table> curves(const Runs& r, const Options& o) {
  Table t;
  const std::string unit = metric_unit(r, o.series);
  const Interval& band = interval_named(o.interval);
  const bool ends = *band.low_header != '\0';
  t.title = "learning curves of " + o.series + " (" + mean_and(o) + " over runs) against " + o.x;
  t.headers = o.by;
  for (const std::string& h : {o.x, std::string("n"), with_unit("mean", unit)}) t.headers.push_back(h);
  if (ends) {
    t.headers.push_back(with_unit(band.low_header, unit));
    t.headers.push_back(with_unit(band.high_header, unit));
  }
  for (const Curve& c : curves_of(r, o)) {
    for (std::size_t i = 0; i < c.x.size(); ++i) {
      std::vector<std::string> row = c.key_values;
      for (const std::string& cell : {num(c.x[i], 8), std::to_string(c.n[i]), num(c.mean[i])}) row.push_back(cell);
      if (ends) {
        row.push_back(num(c.lo[i]));
        row.push_back(num(c.hi[i]));
      }
      t.rows.push_back(row);
    }
  }
  if (o.x == "time_s") {
    t.notes.push_back("time_s: each evaluation at the mean time, over the runs with a value there, at which they "
                      "reached its step");
  }
  if (const std::string note = pooled_note(r, o.by); !note.empty()) t.notes.push_back(note);
  return {t};
}

}  // namespace dpstudy::analyze
