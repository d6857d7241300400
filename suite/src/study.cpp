#include "dpstudy/study.hpp"

#include <boost/program_options.hpp>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

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
  return best;
}

RawValues read_study_file(const std::string& path, const std::vector<std::string>& known, std::string* text) {
  std::ifstream in(path);
  if (!in) throw UsageError(path + ": cannot open the study file");
  std::stringstream buffer;
  buffer << in.rdbuf();
  if (text) *text = buffer.str();
  po::parsed_options parsed(nullptr);
  try {
    std::istringstream again(buffer.str());
    parsed = po::parse_config_file(again, po::options_description(), /*allow_unregistered=*/true);
  } catch (const po::error& e) {
    throw UsageError(path + ": " + e.what());
  }
  RawValues values;
  std::set<std::string> seen;
  for (const auto& opt : parsed.options) {
    const std::string full = opt.string_key;
    const std::string key = full.substr(full.rfind('.') == std::string::npos ? 0 : full.rfind('.') + 1);
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      throw UsageError(path + ": unknown key '" + full + "'; did you mean '" + closest_key(key, known) + "'?");
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
    throw ConfigError("seeds", text, "must be a count >= 1 (seeds 1..n) or a list of seeds");
  }
  std::vector<std::string> seeds;
  for (std::int64_t s = 1; s <= std::int64_t(n); ++s) seeds.push_back(std::to_string(s));
  return seeds;
}

std::vector<ExcludeRule> parse_exclude(const std::string& text, const std::vector<std::string>& known) {
  std::vector<ExcludeRule> rules;
  std::stringstream rule_in(text);
  for (std::string rule; std::getline(rule_in, rule, ';');) {
    if (trim(rule).empty()) continue;
    ExcludeRule r;
    std::stringstream cmp_in(rule);
    for (std::string cmp; std::getline(cmp_in, cmp, '&');) {
      cmp = trim(cmp);
      const auto pos = cmp.find_first_of("=!<>");
      if (pos == std::string::npos || pos == 0) {
        throw ConfigError("exclude", text, "has '" + cmp + "', expected KEY OP VALUE with OP one of = != < <= > >=");
      }
      std::size_t end = pos + 1;
      if (end < cmp.size() && cmp[end] == '=') ++end;
      Comparison c{trim(cmp.substr(0, pos)), cmp.substr(pos, end - pos), trim(cmp.substr(end))};
      if (c.op == "!") throw ConfigError("exclude", text, "has '!' without '='");
      if (std::find(known.begin(), known.end(), c.key) == known.end()) {
        throw ConfigError("exclude", text, "names unknown key '" + c.key + "'; did you mean '" +
                                               closest_key(c.key, known) + "'?");
      }
      r.push_back(c);
    }
    rules.push_back(r);
  }
  return rules;
}

bool is_excluded(const std::vector<ExcludeRule>& rules, const RawValues& combination) {
  for (const auto& rule : rules) {
    bool all = true;
    for (const auto& c : rule) {
      const auto it = std::find_if(combination.begin(), combination.end(), [&](const auto& kv) { return kv.first == c.key; });
      if (it == combination.end()) {
        all = false;
        break;
      }
      double a = 0, b = 0;
      const bool numeric = as_number(it->second, &a) && as_number(c.value, &b);
      const int order = numeric ? (a < b ? -1 : a > b ? 1 : 0) : it->second.compare(c.value);
      const bool holds = c.op == "=" ? order == 0 : c.op == "!=" ? order != 0 : c.op == "<" ? order < 0
                         : c.op == "<=" ? order <= 0 : c.op == ">" ? order > 0 : order >= 0;
      if (!holds) {
        all = false;
        break;
      }
    }
    if (all) return true;
  }
  return false;
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
  for (const auto& [k, v] : values) text += k + "=" + to_text(v) + "\n";
  return Sha256::of(text.data(), text.size()).substr(0, 16);
}

}  // namespace dpstudy
