// dpstudy-analyze: number formats, labels and intervals shared by its commands.
#include <cmath>
#include <cstdio>
#include <map>

#include "commands.hpp"
#include "dpstudy/error.hpp"
#include "dpstudy/run_config.hpp"
#include "dpstudy/stats.hpp"

namespace dpstudy::analyze {

std::string num(double v, int digits) {
  if (std::isnan(v)) return "-";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

std::string join(const std::vector<std::string>& items, const std::string& separator) {
  std::string s;
  for (const std::string& x : items) s += (s.empty() ? "" : separator) + x;
  return s;
}

std::string pval(double p) {
  if (std::isnan(p)) return "-";
  char buf[40];
  std::snprintf(buf, sizeof buf, p < 1e-4 ? "%.2e" : "%.4f", p);
  return buf;
}

std::string with_unit(const std::string& name, const std::string& unit) {
  return unit.empty() ? name : name + " (" + unit + ")";
}

std::string label(const std::vector<std::string>& keys, const std::vector<std::string>& values) {
  std::string s;
  for (std::size_t i = 0; i < keys.size(); ++i) s += (s.empty() ? "" : " ") + keys[i] + "=" + values[i];
  return s.empty() ? "all" : s;
}

std::vector<std::string> line_names(const std::vector<std::string>& keys, const std::vector<Group>& lines) {
  std::vector<std::string> full, shown;
  for (const Group& line : lines) {
    std::map<std::string, std::size_t> inert_in;  // key -> runs of the line it is inert in
    for (const Run* run : line.runs) {
      for (const auto& [key, because] : inert_keys([&](const std::string& k) { return run->text(k); })) {
        ++inert_in[key];
      }
    }
    std::vector<std::string> kept_keys, kept_values;
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const auto it = inert_in.find(keys[i]);
      if (line.runs.empty() || it == inert_in.end() || it->second < line.runs.size()) {
        kept_keys.push_back(keys[i]);
        kept_values.push_back(line.key_values[i]);
      }
    }
    full.push_back(label(keys, line.key_values));
    shown.push_back(kept_keys.empty() ? full.back() : label(kept_keys, kept_values));
  }
  std::map<std::string, int> uses;
  for (const std::string& name : shown) ++uses[name];
  for (std::size_t i = 0; i < shown.size(); ++i) {
    if (uses[shown[i]] > 1) shown[i] = full[i];
  }
  return shown;
}

namespace {

const std::vector<Interval> kIntervals{{"ci95", "ci95 low", "ci95 high", "95 % confidence interval"},
                                       {"sd", "mean - sd", "mean + sd", "+/- 1 standard deviation"},
                                       {"sem", "mean - sem", "mean + sem", "+/- 1 standard error"},
                                       {"range", "min", "max", "range (min to max)"},
                                       {"none", "", "", ""}};

}  // namespace

const Interval& interval_named(const std::string& name) {
  for (const Interval& i : kIntervals) {
    if (name == i.name) return i;
  }
  throw ConfigError("interval", name, "is not one of: ci95, sd, sem, range, none");
}

std::pair<double, double> interval_ends(const stats::Describe& d, const std::string& name) {
  double lo = d.mean, hi = d.mean;
  if (name == "ci95") lo = d.ci_low, hi = d.ci_high;
  if (name == "sd") lo = d.mean - d.sd, hi = d.mean + d.sd;
  if (name == "sem") lo = d.mean - d.sem, hi = d.mean + d.sem;
  if (name == "range") lo = d.min, hi = d.max;
  return {std::isnan(lo) ? d.mean : lo, std::isnan(hi) ? d.mean : hi};
}

std::string mean_and(const Options& o) {
  const Interval& i = interval_named(o.interval);
  return std::string("mean") + (*i.title ? std::string(" and ") + i.title : "");
}

Runs subset(const Runs& all, const std::vector<const Run*>& runs) {
  Runs r;
  r.columns = all.columns;
  r.units = all.units;
  r.config_keys = all.config_keys;
  for (const Run* run : runs) r.runs.push_back(*run);
  return r;
}

}  // namespace dpstudy::analyze
