#include "dpstudy/study.hpp"

#include <sys/stat.h>

#include <boost/program_options.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "dpstudy/build_info.hpp"
#include "dpstudy/error.hpp"
#include "dpstudy/sha256.hpp"

namespace po = boost::program_options;

namespace dpstudy {
namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

bool as_number(const std::string& s, double* out) {
  try {
    std::size_t used = 0;
    *out = std::stod(s, &used);
    return used == s.size();
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

std::string closest_key(const std::string& key, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_d = std::string::npos;
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(key, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best_d <= std::max<std::size_t>(1, key.size() / 3) ? best : std::string();
}

std::string did_you_mean(const std::string& key, const std::vector<std::string>& candidates, const std::string& open,
                         const std::string& close) {
  const std::string near = closest_key(key, candidates);
  return near.empty() ? std::string() : "; did you mean " + open + near + close + "?";
}

RawValues read_study_file(const std::string& path, const std::vector<std::string>& known, std::string* text,
                          const std::string& workload) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    throw UsageError(path + ": is not a file (a directory?); expected a study file (INI)");
  }
  std::ifstream in(path);
  if (!in) throw UsageError(path + ": cannot open the study file");
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string content = buffer.str();
  // Editors on Windows may start a UTF-8 file with a byte order mark, which the INI
  // reader would take for part of the first line ("invalid line '[study]'").
  if (content.rfind("\xEF\xBB\xBF", 0) == 0) content.erase(0, 3);
  if (text) *text = content;
  po::parsed_options parsed(nullptr);
  try {
    std::istringstream again(content);
    parsed = po::parse_config_file(again, po::options_description(), /*allow_unregistered=*/true);
  } catch (const po::error& e) {
    throw UsageError(path + ": " + e.what());
  }
  // Sections only group keys: "[study] workload" is the key "workload".
  const auto bare = [](const std::string& full) { return full.substr(full.rfind('.') + 1); };
  for (const auto& opt : parsed.options) {
    if (bare(opt.string_key) != "workload") continue;
    const std::string value = opt.value.empty() ? "" : trim(opt.value.front());
    if (value.empty()) break;  // reported below
    const std::vector<std::string> allowed = split_axis("workload", value, false);
    if (std::find(allowed.begin(), allowed.end(), workload) != allowed.end()) break;
    const std::vector<std::string> built = build_info().workloads;
    for (const auto& a : allowed) {
      if (!built.empty() && std::find(built.begin(), built.end(), a) == built.end()) {
        std::string list;
        for (const auto& b : built) list += (list.empty() ? "" : ", ") + b;
        throw UsageError(path + ": its workload key names '" + a + "', not a workload of this dpstudy (" + list + ")" +
                         did_you_mean(a, built, "'", "'"));
      }
    }
    std::string names;
    for (const auto& a : allowed) names += (names.empty() ? "dpstudy-" : " or dpstudy-") + a;
    throw UsageError(path + ": this study is for " + names + " (its workload key), not dpstudy-" + workload +
                     "; run it with that executable, or copy the file and change its workload key");
  }
  RawValues values;
  std::set<std::string> seen;
  for (const auto& opt : parsed.options) {
    const std::string full = opt.string_key;
    const std::string key = bare(full);
    if (key.empty()) {
      const std::string section = full.empty() ? "" : " (in section [" + full.substr(0, full.size() - 1) + "])";
      throw UsageError(path + ": a line has no key before its '='" + section);
    }
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      throw UsageError(path + ": unknown key '" + full + "'" + did_you_mean(key, known, "'", "'"));
    }
    if (!seen.insert(key).second) throw UsageError(path + ": key '" + key + "' is given twice");
    const std::string value = opt.value.empty() ? "" : trim(opt.value.front());
    if (value.empty()) throw UsageError(path + ": key '" + full + "' has an empty value");
    values.emplace_back(key, value);
  }
  return values;
}

std::vector<std::string> split_axis(const std::string& key, const std::string& text, bool list_valued) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, list_valued ? '|' : ',');) {
    item = trim(item);
    if (item.empty()) throw ConfigError(key, text, "has an empty value in its list");
    // A value listed twice would run once (one run id), so `seeds = 1, 1` would
    // quietly give one seed: most likely a slip.
    if (std::find(out.begin(), out.end(), item) != out.end()) {
      throw ConfigError(key, text, "lists '" + item + "' twice");
    }
    out.push_back(item);
  }
  if (out.empty()) throw ConfigError(key, text, "is empty");
  return out;
}

std::vector<std::string> expand_seeds(const std::string& text) {
  const std::vector<std::string> items = split_axis("seeds", text, false);
  if (items.size() > 1) return items;
  double n = 0;
  if (!as_number(items[0], &n) || n < 1 || n != double(std::int64_t(n)) || n > 100000) {
    throw ConfigError("seeds", text, "must be a count from 1 to 100000 (seeds 1..n) or a list of seeds");
  }
  std::vector<std::string> seeds;
  for (std::int64_t s = 1; s <= std::int64_t(n); ++s) seeds.push_back(std::to_string(s));
  return seeds;
}

Comparison parse_comparison(const std::string& text, const std::string& option, const std::string& whole) {
  const std::string cmp = trim(text);
  const auto pos = cmp.find_first_of("=!<>");
  if (pos == std::string::npos || pos == 0) {
    throw ConfigError(option, whole, "has '" + cmp + "', expected KEY=VALUE or KEY OP VALUE with OP one of = != < <= > >=");
  }
  std::size_t end = pos + 1;
  if (end < cmp.size() && cmp[end] == '=') ++end;
  Comparison c{trim(cmp.substr(0, pos)), cmp.substr(pos, end - pos), trim(cmp.substr(end))};
  if (c.op == "!") throw ConfigError(option, whole, "has '!' without '='");
  if (c.value.empty() || std::string("=!<>").find(c.value[0]) != std::string::npos) {
    throw ConfigError(option, whole, "has '" + cmp + "': expected a value after '" + c.op + "'");
  }
  return c;
}

bool holds(const Comparison& c, const std::string& value) {
  double a = 0, b = 0;
  const bool numeric = as_number(value, &a) && as_number(c.value, &b);
  const int order = numeric ? (a < b ? -1 : a > b ? 1 : 0) : value.compare(c.value);
  return c.op == "=" ? order == 0 : c.op == "!=" ? order != 0 : c.op == "<" ? order < 0
         : c.op == "<=" ? order <= 0 : c.op == ">" ? order > 0 : order >= 0;
}

std::vector<ExcludeRule> parse_exclude(const std::string& text, const std::vector<std::string>& known) {
  std::vector<ExcludeRule> rules;
  std::stringstream rule_in(text);
  for (std::string rule; std::getline(rule_in, rule, ';');) {
    if (trim(rule).empty()) continue;
    ExcludeRule r;
    std::stringstream cmp_in(rule);
    for (std::string cmp; std::getline(cmp_in, cmp, '&');) {
      const Comparison c = parse_comparison(cmp, "exclude", text);
      if (std::find(known.begin(), known.end(), c.key) == known.end()) {
        throw ConfigError("exclude", text, "names unknown key '" + c.key + "'" + did_you_mean(c.key, known, "'", "'"));
      }
      r.push_back(c);
    }
    rules.push_back(r);
  }
  return rules;
}

std::string to_string(const ExcludeRule& rule) {
  std::string s;
  for (const auto& c : rule) s += (s.empty() ? "" : " & ") + c.key + c.op + c.value;
  return s;
}

bool matches(const ExcludeRule& rule, const RawValues& combination) {
  for (const auto& c : rule) {
    const auto it = std::find_if(combination.begin(), combination.end(), [&](const auto& kv) { return kv.first == c.key; });
    if (it == combination.end() || !holds(c, it->second)) return false;
  }
  return true;
}

std::vector<RawValues> cartesian_product(const std::vector<std::pair<std::string, std::vector<std::string>>>& axes) {
  std::vector<RawValues> out(1);
  for (const auto& [key, values] : axes) {
    std::vector<RawValues> next;
    for (const auto& partial : out) {
      for (const auto& v : values) {
        RawValues r = partial;
        r.emplace_back(key, v);
        next.push_back(std::move(r));
      }
    }
    out = std::move(next);
  }
  return out;
}

std::string run_id(const std::string& workload, const KeyValues& values) {
  std::string text = "workload=" + workload + "\n";
  for (const auto& [k, v] : values) {
    if (!added_later_at_old_default(k, v)) text += k + "=" + to_text(v) + "\n";
  }
  if (pool_drawn_anew(values)) text += "assignment_scheme=2\n";  // other shards than scheme 1's, same keys
  return Sha256::of(text.data(), text.size()).substr(0, 16);
}

}  // namespace dpstudy

#include <boost/random/sobol.hpp>
#include <cmath>

#include "dpstudy/rng.hpp"

namespace dpstudy {

namespace {
const char* kLog[] = {"lr", "lr_end_factor", "weight_decay"};
}

const std::vector<std::string>& search_keys() {
  static const std::vector<std::string> keys = {
      "search",    "trials",          "search_skip",          "search_seed",         "search_stop",
      "search_lr", "search_momentum", "search_lr_end_factor", "search_weight_decay", "search_lr_decay_steps"};
  return keys;
}

SearchSpec parse_search(const RawValues& values) {
  SearchSpec s;
  auto number = [](const std::string& key, const std::string& text) {
    double v = 0;
    if (!as_number(text, &v)) throw ConfigError(key, text, "is not a number");
    return v;
  };
  for (const auto& [key, text] : values) {
    if (key == "search") {
      if (text != "sobol" && text != "random" && text != "grid") {
        throw ConfigError(key, text, "is not one of: sobol, random, grid");
      }
      s.method = text;
    } else if (key == "trials") {
      const double t = number(key, text);
      if (t < 1 || t != std::floor(t) || t > 100000) {
        throw ConfigError(key, text, "must be a whole number from 1 to 100000");
      }
      s.trials = int(t);
    } else if (key == "search_skip") {
      const double t = number(key, text);
      if (t < 0 || t != std::floor(t) || t > 2147483647) {
        throw ConfigError(key, text, "must be a whole number from 0 to 2147483647");
      }
      s.skip = int(t);
    } else if (key == "search_seed") {
      s.seed = std::uint64_t(number(key, text));
    } else if (key == "search_stop") {
      if (text != "beaten" && text != "none") throw ConfigError(key, text, "is not one of: none, beaten");
      s.stop_beaten = text == "beaten";
    } else if (key.rfind("search_", 0) == 0) {
      const auto colon = text.find(':');
      if (colon == std::string::npos) throw ConfigError(key, text, "must be a range LOW:HIGH, e.g. 1e-4:1");
      SearchDim d{key.substr(7), number(key, text.substr(0, colon)), number(key, text.substr(colon + 1))};
      const bool log = std::find(std::begin(kLog), std::end(kLog), d.key) != std::end(kLog);
      if (!(d.lo < d.hi) || (log && d.lo <= 0) || (d.key == "momentum" && (d.lo < 0 || d.hi >= 1))) {
        throw ConfigError(key, text,
                          "must be a range LOW:HIGH with LOW < HIGH" + std::string(log ? " and LOW > 0 (log scale)" : "") +
                              (d.key == "momentum" ? " within [0, 1)" : ""));
      }
      s.dims.push_back(d);
    }
  }
  if (s.method.empty()) {
    if (!s.dims.empty() || s.trials || s.stop_beaten) {
      throw ConfigError("search", "", "is not set: give search = sobol, random or grid");
    }
    return s;
  }
  if (s.dims.empty()) {
    throw ConfigError("search", s.method, "has an empty search space: give at least one search_<key> = LOW:HIGH");
  }
  if (s.trials == 0) throw ConfigError("trials", "", "is not set: give the number of trials per combination");
  if (s.stop_beaten && s.trials < 2) {
    throw ConfigError("search_stop", "beaten",
                      "needs trials >= 2: a trial is beaten by another trial of its combination");
  }
  return s;
}

std::vector<std::vector<double>> search_points(const SearchSpec& s) {
  const std::size_t d = s.dims.size();
  std::vector<std::vector<double>> points;
  if (s.method == "sobol") {
    boost::random::sobol gen(d);
    gen.discard(std::uintmax_t(s.skip) * d);
    const double range = double(gen.max()) - double(gen.min()) + 1.0;
    for (int t = 0; t < s.trials; ++t) {
      std::vector<double> u(d);
      for (auto& x : u) x = double(gen() - gen.min()) / range;
      points.push_back(u);
    }
  } else if (s.method == "random") {
    Rng rng(s.seed);
    for (int t = 0; t < s.trials; ++t) {
      std::vector<double> u(d);
      for (auto& x : u) x = double(rng.next() >> 11) * 0x1.0p-53;
      points.push_back(u);
    }
  } else {  // grid: k levels per dimension, k^d >= trials, cell centres, the first `trials` points
    int k = 1;
    while (std::pow(double(k), double(d)) < double(s.trials)) ++k;
    for (int t = 0; t < s.trials; ++t) {
      std::vector<double> u(d);
      int rest = t;
      for (std::size_t i = 0; i < d; ++i) {
        u[i] = (double(rest % k) + 0.5) / double(k);
        rest /= k;
      }
      points.push_back(u);
    }
  }
  return points;
}

std::vector<RawValues> search_trials(const SearchSpec& s) {
  std::vector<RawValues> out;
  for (const auto& u : search_points(s)) {
    RawValues trial;
    for (std::size_t i = 0; i < s.dims.size(); ++i) {
      const SearchDim& d = s.dims[i];
      double v;
      if (d.key == "momentum") {
        v = 1 - std::exp(std::log(1 - d.lo) + u[i] * (std::log(1 - d.hi) - std::log(1 - d.lo)));
      } else if (d.key == "lr_decay_steps") {
        v = std::floor(d.lo + u[i] * (d.hi - d.lo) + 0.5);
      } else {
        v = std::exp(std::log(d.lo) + u[i] * (std::log(d.hi) - std::log(d.lo)));
      }
      trial.emplace_back(d.key, to_text(ConfigValue(v)));  // the shortest text that reads back exactly
    }
    out.push_back(trial);
  }
  return out;
}

}  // namespace dpstudy
