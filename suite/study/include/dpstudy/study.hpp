// Studies: the keys of a study file and the command line turned into a list of
// runs (the cartesian product of every multi-valued key, times the seeds, less
// the excluded combinations), each with a stable run id. See docs/studies.md.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "dpstudy/run_config.hpp"

namespace dpstudy {

// Samples per step over all workers (workers x batch_size). A study key that sets each
// run's batch_size (study_plan.cpp), not a run key: runs are stored, identified and indexed
// by their batch_size; dpstudy-analyze derives a column of this name from the index.
inline constexpr const char* kGlobalBatch = "global_batch";

// Key -> raw text, in the order keys are declared (not the order given).
using RawValues = std::vector<std::pair<std::string, std::string>>;

// Reads a study file (INI; [sections] only group keys: "[sweep] workers = 1,2"
// and "workers = 1,2" are the same key). Throws UsageError naming the file and
// key for unknown keys (with the closest known one), repeated keys and empty values.
// A `workload` key lists the workloads the study is for; a study for others is
// refused before its keys are checked (they are another model's), naming both.
RawValues read_study_file(const std::string& path, const std::vector<std::string>& known_keys,
                          std::string* text, const std::string& workload);

// The closest of `candidates` to `key` (edit distance), for "did you mean"; ""
// when none is within a third of the key's length (at least 1 edit), so that
// an unrelated key gets no suggestion.
std::string closest_key(const std::string& key, const std::vector<std::string>& candidates);
// "; did you mean <open>K<close>?" for the closest key; "" when none is close
// (the message then relies on its "see --help" line, or its own list of keys).
std::string did_you_mean(const std::string& key, const std::vector<std::string>& candidates, const std::string& open,
                         const std::string& close);

// One axis value list: "a,b,c" (for list-valued keys such as lr_milestones:
// "150,225 | 100,150"). Throws ConfigError for empty values.
std::vector<std::string> split_axis(const std::string& key, const std::string& text, bool list_valued);

// `seeds`: a count n (seeds 1..n) or an explicit list.
std::vector<std::string> expand_seeds(const std::string& text);

// exclude = "sync_period=1 & overlap>0; workers=1 & overlap>0": rules separated
// by ';', comparisons (=, !=, <, <=, >, >=) joined by '&'; numbers compare as
// numbers, other values as text.
struct Comparison {
  std::string key, op, value;
};
// One "KEY OP VALUE" (also dpstudy-analyze's --where). Throws ConfigError on
// `option` with `whole` (the text the user gave) as the value.
Comparison parse_comparison(const std::string& text, const std::string& option, const std::string& whole);
// Whether `value` OP c.value holds: numbers as numbers, other values as text.
bool holds(const Comparison& c, const std::string& value);
using ExcludeRule = std::vector<Comparison>;
std::vector<ExcludeRule> parse_exclude(const std::string& text, const std::vector<std::string>& known_keys);
// Whether every comparison of `rule` holds for `combination` (a key the
// combination does not give never holds).
bool matches(const ExcludeRule& rule, const RawValues& combination);
// "key=value & key>value", as the rule was given.
std::string to_string(const ExcludeRule& rule);

// The cartesian product of the axes, first key outermost.
std::vector<RawValues> cartesian_product(const std::vector<std::pair<std::string, std::vector<std::string>>>& axes);

// A stable id: the first 16 hex digits of the SHA-256 of "workload=..." and
// every key=value of `values` (the resolved, result-affecting parameters).
std::string run_id(const std::string& workload, const KeyValues& values);

}  // namespace dpstudy

namespace dpstudy {

// Metaparameter search (Shallue et al. 2018; Lee et al. 2021): `trials` points
// per combination of the other axes, drawn from a quasi-random Sobol sequence
// (Boost.Random's sobol, which starts at (0.5, ..., 0.5), with `skip` more points
// skipped), uniformly at random,
// or on a grid, and mapped onto each dimension's range:
//   lr, lr_end_factor, weight_decay: log scale;
//   momentum: log scale in 1 - momentum;
//   lr_decay_steps: whole steps, linear.
struct SearchDim {
  std::string key;
  double lo = 0, hi = 0;
};
struct SearchSpec {
  std::string method;  // "" (none), "sobol", "random", "grid"
  int trials = 0;
  int skip = 0;  // Boost's sequence already leaves out the origin
  std::uint64_t seed = 1;  // for random
  std::vector<SearchDim> dims;
  // search_stop = beaten: a trial stops at an evaluation where another trial
  // of its combination has reached the goal in as many steps or fewer. The
  // best trial's steps to the goal are those of the whole search, for less
  // of its cost (docs/studies.md#beaten-trials). Not part of any run id.
  bool stop_beaten = false;
};

// The keys a study file may use for a search, e.g. search_lr = 1e-4:1.
const std::vector<std::string>& search_keys();
// Builds the spec from the study's values of search_keys(); ConfigError naming
// the key for a bad range, an empty space, or an unknown method.
SearchSpec parse_search(const RawValues& values);
// Points in [0, 1)^d, one row per trial.
std::vector<std::vector<double>> search_points(const SearchSpec& spec);
// Each trial's values, as the text of each dimension's key.
std::vector<RawValues> search_trials(const SearchSpec& spec);

}  // namespace dpstudy
