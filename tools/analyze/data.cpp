// The runs read, as the commands see them: their keys and levels, the
// --where filter, groups of runs, and the cells that pool runs of two schemes.
// A run's metrics and goals: run_metrics.cpp.
#include "data.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <set>
#include <sstream>

#include "dpstudy/error.hpp"
#include "dpstudy/run_config.hpp"
#include "dpstudy/study.hpp"

namespace dpstudy::analyze {

bool Run::status_is(const char* status) const {
  const auto it = texts.find("status");
  return it != texts.end() && it->second == status;
}

std::string format_number(double v) {
  if (std::isnan(v)) return "nan";
  char buf[40];
  for (int precision = 6; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

std::optional<std::string> Run::text(const std::string& key) const {
  if (auto it = texts.find(key); it != texts.end()) return it->second;
  if (auto it = numbers.find(key); it != numbers.end()) {
    // Periods store "never" as -1 (options.cpp); show it as the study file says it.
    if ((key == "sync_period" || key == "group_sync_period") && it->second == -1) return std::string("never");
    return format_number(it->second);
  }
  return std::nullopt;
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

void require_columns(const Runs& r, const std::vector<std::string>& keys, const char* what) {
  for (const auto& k : keys) {
    if (std::find(r.columns.begin(), r.columns.end(), k) == r.columns.end()) {
      std::string all;
      for (const auto& c : r.columns) all += (all.empty() ? "" : ", ") + c;
      const std::string near = did_you_mean(k, r.columns, "'", "'");
      throw UsageError(std::string(what) + " '" + k + "' is not a column of the index" + near +
                       (near.empty() ? "; columns: " : " Columns: ") + all);
    }
  }
}

namespace {

using Values = std::set<std::string, bool (*)(const std::string&, const std::string&)>;  // 2 before 16

// The distinct values of `key` among the runs ("" for a run without it), numbers in order.
Values values_of(const Runs& r, const std::string& key) {
  Values values(value_less);
  for (const Run& run : r.runs) values.insert(run.text(key).value_or(""));
  return values;
}

// "a, b, c, ..." up to `max` of them ("-": a run without the key).
std::string value_list(const Values& values, std::size_t max) {
  std::string list;
  std::size_t shown = 0;
  for (const auto& v : values) {
    if (shown++ == max) return list + ", ...";
    list += (shown == 1 ? "" : ", ") + (v.empty() ? std::string("-") : v);
  }
  return list;
}

}  // namespace

void require_levels(const Runs& r, const std::vector<std::string>& keys, const char* what) {
  require_columns(r, keys, what);
  for (const auto& k : keys) {
    const Values values = values_of(r, k);
    if (values.size() < 2) {
      throw UsageError(std::string(what) + " '" + k + "' has one value (" +
                       (values.empty() ? std::string("no runs") : values.begin()->empty() ? std::string("-") : *values.begin()) + ") in the " +
                       std::to_string(r.runs.size()) + " runs read: nothing to compare across it");
    }
  }
}

bool value_less(const std::string& a, const std::string& b) {
  char *ea = nullptr, *eb = nullptr;
  const double x = std::strtod(a.c_str(), &ea), y = std::strtod(b.c_str(), &eb);
  if (ea && *ea == '\0' && eb && *eb == '\0' && !a.empty() && !b.empty()) return x < y;
  return a < b;
}

std::vector<std::string> varying_run_keys(const Runs& r) {
  std::vector<std::string> out;
  for (const std::string& c : r.columns) {
    if (r.config_keys.count(c) && values_of(r, c).size() > 1) out.push_back(c);
  }
  return out;
}
std::string pooled_note(const Runs& r, const std::vector<std::string>& held) {
  std::string varying;
  for (const std::string& k : r.config_keys) {
    if (k == "seed" || k == "data_seed" || std::find(held.begin(), held.end(), k) != held.end()) continue;
    // Its values within each group (the completed runs of one combination of the held keys).
    std::map<std::vector<std::string>, Values> by_group;
    Values all(value_less);
    for (const Run& run : r.runs) {
      if (!run.completed()) continue;
      std::vector<std::string> group;
      for (const std::string& h : held) group.push_back(run.text(h).value_or(""));
      const std::string v = run.text(k).value_or("");
      by_group.try_emplace(group, value_less).first->second.insert(v);
      all.insert(v);
    }
    if (std::none_of(by_group.begin(), by_group.end(), [](const auto& g) { return g.second.size() > 1; })) continue;
    varying += (varying.empty() ? "" : "; ") + k + " (" + value_list(all, 4) + ")";
  }
  if (varying.empty()) return {};
  return "pooled over " + varying + ": each group mixes runs of these values; add the keys to the grouping "
         "keys, or fix them with --where";
}

void apply_where(Runs& r, const std::vector<std::string>& where) {
  // KEY OP VALUE, parsed and compared as a study's exclude rules (study.hpp).
  for (std::size_t w = 0; w < where.size(); ++w) {
    const std::string& text = where[w];
    const Comparison c = parse_comparison(text, "where", text);
    require_columns(r, {c.key}, "--where key");
    char* end = nullptr;
    std::strtod(c.value.c_str(), &end);
    const bool numeric_value = *end == '\0';
    std::vector<Run> kept;
    for (auto& run : r.runs) {
      // A number compares as stored (a period of never as -1: sync_period>0),
      // or as shown when the condition names a word (sync_period=never).
      const auto it = run.numbers.find(c.key);
      if (it != run.numbers.end() && std::isnan(it->second)) continue;  // a run without the key matches nothing
      const std::string value = it != run.numbers.end() && numeric_value ? format_number(it->second)
                                                                          : run.text(c.key).value_or("");
      if (holds(c, value)) kept.push_back(std::move(run));
    }
    // Which condition emptied the selection, and what its key takes there: most often a
    // value the study never ran (sync_period=4 where it ran 1 and 32). None was moved out.
    if (kept.empty() && !r.runs.empty()) {
      const Values values = values_of(r, c.key);
      const std::string which = w == 0 ? "" : " the conditions before it kept";
      throw UsageError("no run matches the --where conditions: '" + text + "' keeps none of the " +
                       std::to_string(r.runs.size()) + " runs" + which + "; " + c.key + " takes " +
                       value_list(values, 10) + (values.size() > 10 ? " (" + std::to_string(values.size()) +
                       " values)" : "") + " there");
    }
    r.runs = std::move(kept);
  }
  if (r.runs.empty()) throw UsageError("no run matches the --where conditions");
}

std::vector<Group> group_runs(const Runs& r, const std::vector<std::string>& keys, Counted counted) {
  require_columns(r, keys, "grouping key");
  std::vector<Group> groups;
  for (const auto& run : r.runs) {
    std::vector<std::string> kv;
    for (const auto& k : keys) kv.push_back(run.text(k).value_or(""));
    auto it = std::find_if(groups.begin(), groups.end(), [&](const Group& g) { return g.key_values == kv; });
    if (it == groups.end()) {
      groups.push_back({kv, {}, 0});
      it = groups.end() - 1;
    }
    if (run.completed() || counted == Counted::every || (counted == Counted::to_goal && run.beaten())) {
      it->runs.push_back(&run);
    }
    if (!run.completed()) ++it->not_completed;
  }
  std::sort(groups.begin(), groups.end(), [&](const Group& a, const Group& b) {
    for (std::size_t i = 0; i < a.key_values.size(); ++i) {
      if (a.key_values[i] != b.key_values[i]) return value_less(a.key_values[i], b.key_values[i]);
    }
    return false;
  });
  return groups;
}

Runs with_shared_cells(const Runs& r, const std::vector<std::string>& keys, std::size_t* copies) {
  require_columns(r, keys, "grouping key");
  std::vector<std::vector<bool>> inert;                    // per run, per key
  std::vector<std::set<std::string>> values(keys.size());  // each key's values where it is not inert
  for (const Run& run : r.runs) {
    std::vector<bool> here(keys.size(), false);
    for (const auto& [key, because] : inert_keys([&](const std::string& k) { return run.text(k); })) {
      for (std::size_t i = 0; i < keys.size(); ++i) here[i] = here[i] || keys[i] == key;
    }
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (!here[i]) values[i].insert(run.text(keys[i]).value_or(""));
    }
    inert.push_back(std::move(here));
  }
  Runs out = r;
  out.runs.clear();
  std::size_t added = 0;
  for (std::size_t j = 0; j < r.runs.size(); ++j) {
    std::vector<Run> cells{r.runs[j]};
    bool shared = false;
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (!inert[j][i] || values[i].empty()) continue;
      const std::string own = r.runs[j].text(keys[i]).value_or("");
      shared = shared || values[i].size() > 1 || *values[i].begin() != own;
      std::vector<Run> next;
      for (const Run& cell : cells) {
        for (const std::string& v : values[i]) {
          Run copy = cell;
          if (copy.numbers.count(keys[i])) {
            copy.numbers[keys[i]] = std::strtod(v.c_str(), nullptr);
          } else {
            copy.texts[keys[i]] = v;
          }
          next.push_back(std::move(copy));
        }
      }
      cells = std::move(next);
    }
    if (shared) added += cells.size() - 1;
    for (Run& cell : cells) {
      if (shared) cell.texts["shared"] = "1";
      out.runs.push_back(std::move(cell));
    }
  }
  if (added > 0 && std::find(out.columns.begin(), out.columns.end(), "shared") == out.columns.end()) {
    out.columns.push_back("shared");
  }
  if (copies) *copies = added;
  return out;
}

void warn_of_assignment_schemes(Runs& r) {
  std::size_t old_changed = 0, newer = 0;
  for (const Run& run : r.runs) {
    const double scheme = run.numbers.count("assignment_scheme") ? run.numbers.at("assignment_scheme") : 1;
    if (scheme >= 2) {
      ++newer;
      continue;
    }
    // The engine's own test of whether scheme 2 drew other shards for these keys.
    KeyValues config;
    for (const char* k : {"granularity", "overlap_mode", "overlap", "workers", "group_size", "shard_owner"}) {
      if (const auto v = run.text(k)) config.emplace_back(k, *v);
    }
    if (pool_drawn_anew(config)) ++old_changed;
  }
  if (old_changed == 0) return;
  r.warnings.push_back(std::to_string(old_changed) + " run(s) are of assignment scheme 1: their coarse pool was the " +
                       "first overlap fraction of the order (with order = label, the first classes), not a random " +
                       "sample" +
                       (newer > 0 ? "; they are read beside " + std::to_string(newer) + " run(s) of scheme 2" : "") +
                       ". Keep them apart (--by assignment_scheme, --where assignment_scheme=2) or train them again "
                       "(CHANGELOG.md)");
}

}  // namespace dpstudy::analyze
