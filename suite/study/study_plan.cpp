// A Request's runs: every combination of its axes (and search trials),
// excluded ones dropped, each resolved to a RunConfig with its run id.
#include <boost/program_options.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <set>

#include "dpstudy/error.hpp"
#include "dpstudy/option_errors.hpp"
#include "dpstudy/options.hpp"
#include "dpstudy/workload.hpp"
#include "job.hpp"

namespace po = boost::program_options;

namespace dpstudy {

std::string axes_text(const RawValues& values, const std::vector<std::string>& swept) {
  std::string s;
  for (const auto& [k, v] : values) {
    if (std::find(swept.begin(), swept.end(), k) != swept.end()) s += (s.empty() ? "" : " ") + k + "=" + v;
  }
  return s.empty() ? "-" : s;
}

namespace {

bool has_key(const RawValues& combo, const std::string& key) {
  return std::any_of(combo.begin(), combo.end(), [&](const auto& kv) { return kv.first == key; });
}

// The batch_size that a combination's global_batch gives with its workers (the workload's
// default when the study gives none); ConfigError unless it is whole; none where the
// workers value is wrong (its own check says so).
std::optional<std::string> batch_of_global(const RawValues& combo, const std::string& global, int default_workers) {
  std::size_t end = 0;
  long long g = 0;
  try {
    g = std::stoll(global, &end);
  } catch (const std::exception&) {
    end = 0;
  }
  if (end == 0 || end != global.size() || g < 1) {
    throw ConfigError(kGlobalBatch, global, "must be a whole number of samples >= 1");
  }
  long long w = default_workers;
  for (const auto& [k, v] : combo) {
    if (k != "workers") continue;
    try {
      w = std::stoll(v, &end);
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  if (w < 1) return std::nullopt;
  if (g % w != 0) {
    throw ConfigError(kGlobalBatch, global,
                      "is not a multiple of workers (" + std::to_string(w) + "): each worker's batch_size would be "
                      "fractional");
  }
  return std::to_string(g / w);
}

// `share`: keys that change nothing take their canonical value, so that cells that
// train alike share one run. Throughput mode measures each point as given.
PlannedRun resolve(const RawValues& combo, const Workload& workload, bool share) {
  RunOptions run_options(workload.defaults);
  po::options_description md("Model");
  if (workload.model_options) workload.model_options(md);
  po::options_description d;
  d.add(run_options.description()).add(md);
  std::vector<std::string> args;
  for (const auto& [k, v] : combo) {
    if (k != kGlobalBatch) {
      args.insert(args.end(), {"--" + k, v});
    } else if (!has_key(combo, "batch_size")) {  // plan_runs found it gives no whole batch: say why
      (void)batch_of_global(combo, v, workload.defaults.workers);
    }
  }
  // A ratio given without a rate replaces the workload's default rate.
  if (has_key(combo, "batch_lr_ratio") && !has_key(combo, "lr")) args.insert(args.end(), {"--lr", "0"});
  po::variables_map rv;
  store_options(po::command_line_parser(args).options(d).run(), rv);
  po::notify(rv);
  PlannedRun p;
  p.values = combo;
  // Keys that change nothing take one value, so that configurations that
  // train alike share one run id (docs/studies.md, "Shared runs").
  p.config = share ? canonical(run_options.resolve()) : run_options.resolve();
  if (workload.model_values) p.model_values = workload.model_values();
  p.key_values = p.config.key_values();
  p.key_values.insert(p.key_values.end(), p.model_values.begin(), p.model_values.end());
  return p;
}

// Why a rule drops nothing, which is most often a slip: a ',' for ';', a key
// left at its default, a value no axis has.
std::string unmatched_rule_note(const ExcludeRule& rule, const decltype(Request::axes)& axes,
                                const std::vector<PlannedRun>& runs) {
  std::string why;
  for (const auto& c : rule) {
    const auto axis = std::find_if(axes.begin(), axes.end(), [&](const auto& a) { return a.first == c.key; });
    std::string part;
    const bool derived = c.key == "batch_size" && std::any_of(axes.begin(), axes.end(), [](const auto& a) {
                           return a.first == kGlobalBatch;
                         });
    if (derived) {
      std::set<std::int64_t> batches;
      for (const PlannedRun& p : runs) batches.insert(p.config.batch_size);
      std::string values;
      for (const std::int64_t b : batches) values += (values.empty() ? "" : ", ") + std::to_string(b);
      part = "batch_size is global_batch / workers here (it takes " + values + ")";
    } else if (axis == axes.end()) {
      part = c.key + " is not given by the study (its default applies; rules see only the values a study gives)";
    } else {
      std::string values;
      for (const auto& v : axis->second) values += (values.empty() ? "" : ", ") + v;
      part = c.key + " takes " + values;
    }
    why += (why.empty() ? "" : "; ") + part;
    if (c.value.find(',') != std::string::npos) why += " (rules are separated by ';', comparisons joined by '&')";
  }
  return "# warning: the exclude rule '" + to_string(rule) + "' drops no combination: " + why;
}

// Keys given that change nothing in any run that gives them: a slip
// (--optimizer sgd --momentum 0.5), or a key the study sweeps for nothing.
std::vector<std::string> inert_key_notes(const std::vector<PlannedRun>& runs) {
  std::map<std::string, std::size_t> given, inert;
  std::map<std::string, std::set<std::string>> because;
  for (const PlannedRun& p : runs) {
    const auto inert_here = p.config.inert_keys();
    for (const auto& kv : p.values) {
      ++given[kv.first];
      for (const auto& [key, why] : inert_here) {
        if (key == kv.first) ++inert[key], because[key].insert(why);
      }
    }
  }
  std::vector<std::string> notes;
  for (const auto& [key, n] : inert) {
    if (n != given[key]) continue;
    std::string reasons;  // "optimizer = sgd", "schedule = cosine or schedule = step"
    for (const auto& r : because[key]) reasons += (reasons.empty() ? "" : " or ") + r;
    notes.push_back("# warning: " + key + " changes nothing in " +
                    (n == 1 ? std::string("the run") : "any of the " + std::to_string(n) + " runs") + ": " + reasons);
  }
  return notes;
}

std::string with_commas(std::size_t n) {
  std::string digits = std::to_string(n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// "# shared: 8,400 cells, 6,760 distinct runs (1,640 shared): overlap changes
// nothing where workers = 1; ...": what training each configuration once saves.
std::string sharing_note(const Plan& plan, const std::map<std::string, std::set<std::string>>& why) {
  std::string reasons;
  for (const auto& [key, because] : why) {
    std::string r;
    for (const auto& b : because) r += (r.empty() ? "" : " or ") + b;
    reasons += (reasons.empty() ? "" : "; ") + key + (r.empty() ? " resolves alike" : " changes nothing where " + r);
  }
  return "# shared: " + with_commas(plan.cells) + " cells, " + with_commas(plan.runs.size()) + " distinct runs (" +
         with_commas(plan.cells - plan.runs.size()) + " shared): " + reasons +
         " (each trained once; docs/studies.md#shared-runs)";
}

// The keys whose values tell cell `b` from the run `a` it shares, each with
// the rule of a's that makes it inert (none: the two resolve to one config).
void note_sharing(const PlannedRun& a, const RawValues& b, std::map<std::string, std::set<std::string>>* why) {
  const auto inert = a.config.inert_keys();
  for (const auto& [key, value] : b) {
    const auto same = std::find_if(a.values.begin(), a.values.end(), [&](const auto& kv) { return kv.first == key; });
    if (same != a.values.end() && same->second == value) continue;
    auto& reasons = (*why)[key];
    for (const auto& [k, because] : inert) {
      if (k == key) reasons.insert(because);
    }
  }
}

// The place of `base`'s seed among the study's seeds (0 without a seed axis):
// its replicate, for PlannedRun::round.
std::size_t place_of_seed(const std::vector<std::pair<std::string, std::vector<std::string>>>& axes,
                          const RawValues& base) {
  const auto seeds = std::find_if(axes.begin(), axes.end(), [](const auto& a) { return a.first == "seed"; });
  const auto seed = std::find_if(base.begin(), base.end(), [](const auto& kv) { return kv.first == "seed"; });
  if (seeds == axes.end() || seed == base.end()) return 0;
  return std::size_t(std::find(seeds->second.begin(), seeds->second.end(), seed->second) - seeds->second.begin());
}

// search_stop = beaten compares trials by their steps to the goal: every run needs one.
void check_stop_beaten(const Request& request, const Plan& plan) {
  if (!request.stop_beaten) return;
  for (const PlannedRun& p : plan.runs) {
    if (!(p.config.goal_error > 0)) {
      throw ConfigError("search_stop", "beaten",
                        "stops a trial once another has reached the goal in fewer steps: it needs goal_error > 0 (" +
                            axes_text(p.values, request.swept) + " has none)");
    }
  }
}

}  // namespace

namespace {

Plan plan_study(const Request& request, const Workload& workload) {
  // Every combination is held in memory before the exclude rules drop any: a slip such as
  // `seeds = 65537` for 5, or four axes of a hundred values, would take minutes or all of it.
  double combinations = double(std::max<std::size_t>(request.trials.size(), 1));
  std::string sizes;
  for (const auto& [key, values] : request.axes) {
    combinations *= double(values.size());
    if (values.size() > 1) sizes += (sizes.empty() ? "" : " x ") + key + " " + std::to_string(values.size());
  }
  if (request.trials.size() > 1) sizes += (sizes.empty() ? "" : " x ") + std::to_string(request.trials.size()) + " trials";
  if (combinations > double(kMaxRunsPerStudy)) {
    char count[32];
    std::snprintf(count, sizeof count, "%.0f", combinations);
    throw UsageError("the study has " + std::string(count) + " combinations (" + sizes + "), more than the " +
                     std::to_string(kMaxRunsPerStudy) + " runs one study may plan (before exclude rules): split it "
                     "into several studies (each its own --name, with part of an axis), or check the axes for a slip");
  }
  Plan plan;
  std::map<std::string, std::size_t> planned;  // run id -> its place in plan.runs: each trained once
  std::map<std::string, std::set<std::string>> shared_why;
  std::vector<std::string> invalid;
  std::set<std::string> invalid_reasons;
  std::vector<std::size_t> dropped_by(request.rules.size());
  std::size_t combination = 0;  // of the axes, kept by the exclude rules
  for (RawValues base : cartesian_product(request.axes)) {
    const std::size_t seed_place = place_of_seed(request.axes, base);
    // global_batch gives each combination its batch_size, which exclude rules and the run's
    // listing see as if the study had given it (resolve() says why where it gives none).
    const auto global = std::find_if(base.begin(), base.end(), [](const auto& kv) { return kv.first == kGlobalBatch; });
    if (global != base.end()) {
      try {
        if (auto batch = batch_of_global(base, global->second, workload.defaults.workers)) {
          base.emplace_back("batch_size", std::move(*batch));
        }
      } catch (const ConfigError&) {
        // left without one: resolve() reports it as an invalid combination
      }
    }
    bool dropped = false;
    for (std::size_t i = 0; i < request.rules.size(); ++i) {
      if (matches(request.rules[i], base)) {
        ++dropped_by[i];
        dropped = true;
      }
    }
    if (dropped) {
      ++plan.excluded;
      continue;
    }
    ++combination;
    for (std::size_t trial = 0; trial < request.trials.size(); ++trial) {
      RawValues combo = base;
      combo.insert(combo.end(), request.trials[trial].begin(), request.trials[trial].end());
      try {
        PlannedRun p = resolve(combo, workload, request.options.mode != "throughput");
        if (request.searched) {
          p.key_values.emplace_back("trial", std::int64_t(trial));  // a stable trial id, part of the run id
          p.values.emplace_back("trial", std::to_string(trial));
        } else if (request.stored.trial >= 0) {
          p.key_values.emplace_back("trial", request.stored.trial);
        }
        p.id = run_id(workload.name, p.key_values);
        p.round = seed_place * request.trials.size() + trial;
        p.combination = combination;
        ++plan.cells;
        const auto [at, fresh] = planned.emplace(p.id, plan.runs.size());
        if (fresh) {
          plan.runs.push_back(std::move(p));
        } else {
          PlannedRun& shared = plan.runs[at->second];
          ++shared.cells;
          note_sharing(shared, p.values, &shared_why);
        }
      } catch (const std::exception& e) {
        if (!request.study_mode) throw;
        if (request.swept.empty()) throw UsageError(e.what());  // one combination: no list to pick from
        invalid.push_back("  " + axes_text(combo, request.swept) + ": " + e.what());
        invalid_reasons.insert(e.what());
      }
    }
  }
  // A value every combination refuses (`epochs = 1.5` beside a swept key) is a slip in that
  // key, not a set of combinations to exclude.
  if (!invalid.empty() && plan.runs.empty() && invalid_reasons.size() == 1) throw UsageError(*invalid_reasons.begin());
  if (!invalid.empty()) {
    std::string msg = std::to_string(invalid.size()) + " combination(s) are invalid (drop them with --exclude):";
    for (std::size_t i = 0; i < invalid.size() && i < 10; ++i) msg += "\n" + invalid[i];
    if (invalid.size() > 10) msg += "\n  ... and " + std::to_string(invalid.size() - 10) + " more";
    throw UsageError(msg);
  }
  if (plan.runs.empty()) throw UsageError("the study has no runs (every combination is excluded)");
  for (std::size_t i = 0; i < request.rules.size(); ++i) {
    if (dropped_by[i] == 0) plan.notes.push_back(unmatched_rule_note(request.rules[i], request.axes, plan.runs));
  }
  if (request.stored.run_id.empty()) {  // a reproduction gives every key its file holds
    for (auto& note : inert_key_notes(plan.runs)) plan.notes.push_back(std::move(note));
  }
  if (plan.cells > plan.runs.size()) plan.notes.push_back(sharing_note(plan, shared_why));
  return plan;
}

}  // namespace

Plan plan_runs(const Request& request, const Workload& workload) {
  if (request.options.reproduce.empty()) {
    Plan plan = plan_study(request, workload);
    check_stop_beaten(request, plan);
    return plan;
  }
  try {
    return plan_study(request, workload);
  } catch (const UsageError& e) {
    // The values are the run file's, not the command line's.
    throw UsageError("--reproduce: " + request.options.reproduce + ": its stored config is refused (a damaged or " +
                     "edited run file?): " + e.what());
  }
}

int procs_for_run(const RunConfig& c, int requested, int world) {
  const int w = c.workers;
  const int p = requested > 0 ? requested : default_procs_per_run(w, world);
  if (p > world || w % p != 0) {
    throw ConfigError("procs_per_run", std::to_string(p),
                      "must divide workers (" + std::to_string(w) + ") and be at most the " + std::to_string(world) +
                          " processes of the job");
  }
  const int per_process = w / p, group = c.group_size;
  if (group > 1 && per_process % group != 0 && group % per_process != 0) {
    throw ConfigError("group_size", std::to_string(group),
                      "must divide, or be a multiple of, the workers per process (" + std::to_string(w) + " / " +
                          std::to_string(p) + " processes = " + std::to_string(per_process) + ")");
  }
  return p;
}

}  // namespace dpstudy
