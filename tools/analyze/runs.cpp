// dpstudy-analyze runs: one row per run read (after --where), for a look at
// what a study holds or a spreadsheet (--format csv).
#include <algorithm>
#include <cmath>
#include <set>

#include "commands.hpp"

namespace dpstudy::analyze {

std::vector<Table> runs(const Runs& r, const Options& o) {
  // The run keys that tell the runs apart, or the ones asked for.
  std::vector<std::string> keys = o.by.empty() ? varying_run_keys(r) : o.by;
  require_columns(r, keys, "--by");
  // Runs trained on other copies of the data files differ by that too (the warning of warnings.cpp).
  std::set<std::string> digests;
  for (const Run& run : r.runs) digests.insert(run.text("data_digest").value_or(""));
  if (o.by.empty() && digests.size() > 1) keys.insert(keys.begin(), "data_digest");
  if (o.by.empty()) {  // and runs of several LibTorch or BLAS builds by those (warn_of_stacks)
    const std::vector<std::string> stack = varying_stack_keys(r);
    keys.insert(keys.begin(), stack.begin(), stack.end());
  }
  if (const auto seed = std::find(keys.begin(), keys.end(), "seed"); o.by.empty() && seed != keys.end()) {
    std::rotate(seed, seed + 1, keys.end());  // the replicates last
  }
  const bool several = std::any_of(r.runs.begin(), r.runs.end(),
                                   [&](const Run& run) { return run.texts.at("study_dir") != r.runs[0].texts.at("study_dir"); });
  std::vector<std::string> sort_keys = keys;
  if (several) sort_keys.insert(sort_keys.begin(), "study_dir");
  std::vector<const Run*> order;
  for (const Run& run : r.runs) order.push_back(&run);
  std::stable_sort(order.begin(), order.end(), [&](const Run* a, const Run* b) {
    for (const std::string& k : sort_keys) {
      const std::string x = a->text(k).value_or(""), y = b->text(k).value_or("");
      if (x != y) return value_less(x, y);
    }
    return false;
  });
  Table t;
  t.title = std::to_string(order.size()) + " runs: the run keys that tell them apart, and " + o.metric;
  if (several) t.headers.push_back("study_dir");
  for (const char* h : {"run_id", "status"}) t.headers.push_back(h);
  t.headers.insert(t.headers.end(), keys.begin(), keys.end());
  t.headers.push_back(with_unit(o.metric, metric_unit(r, o.metric)));
  const std::vector<double> values = metric_values(r, order, o.metric);
  for (std::size_t i = 0; i < order.size(); ++i) {
    std::vector<std::string> row;
    if (several) row.push_back(order[i]->texts.at("study_dir"));
    row.push_back(order[i]->text("run_id").value_or(""));
    row.push_back(order[i]->text("status").value_or(""));
    for (const std::string& k : keys) row.push_back(order[i]->text(k).value_or(""));
    row.push_back(num(values[i]));
    t.rows.push_back(row);
  }
  if (keys.empty()) t.notes.push_back("no run key differs between these runs (--by names the columns to show)");
  if (is_goal_metric(o.metric) && std::any_of(values.begin(), values.end(), [](double v) { return std::isnan(v); })) {
    t.notes.push_back(o.metric + " -: the run never reached the goal");
  }
  return {t};
}

}  // namespace dpstudy::analyze
