// The command-line (and, later, study-file) face of RunConfig: one
// Boost.Program_options description, grouped by topic, bound to a draft that
// resolve() turns into a validated, immutable RunConfig.
#pragma once

#include <boost/program_options.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "dpstudy/run_config.hpp"

namespace dpstudy {

class RunOptions {
 public:
  // `defaults` are the workload's: what --help shows and what is used when a key is absent.
  explicit RunOptions(const RunConfig& defaults);
  // The option descriptions point into this object.
  RunOptions(const RunOptions&) = delete;
  RunOptions& operator=(const RunOptions&) = delete;
  // Every run option, in groups (data, workers and assignment, synchronisation,
  // optimiser, learning rate, evaluation), to add to a parser.
  const boost::program_options::options_description& description() const { return description_; }
  // After the parser's notify(): converts names, checks every value, returns the config.
  RunConfig resolve() const;

 private:
  RunConfig draft_;
  std::string overlap_mode_, granularity_, order_, shard_owner_, optimizer_, lr_scaling_, schedule_, warmup_start_,
      augment_, precision_, memory_format_, pruning_, sync_period_, group_sync_period_, milestones_;
  std::string seed_;  // as text: Boost reads "-1" into an unsigned as 2^64 - 1
  boost::program_options::options_description description_;
};

// "never" -> kNever, a whole number >= 1 -> itself; else ConfigError naming `option`.
int parse_period(const std::string& option, const std::string& text);
// A seed: a whole number from 0 to 2^64 - 1 in decimal; else ConfigError naming `option`.
std::uint64_t parse_seed(const std::string& option, const std::string& text);
// "a,b,c" -> numbers; ConfigError naming `option` on anything else.
std::vector<double> parse_number_list(const std::string& option, const std::string& text);

}  // namespace dpstudy
