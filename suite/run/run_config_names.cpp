// The names of a run's enumerated options, as study files, the command line
// and result files spell them, and their parsing (ConfigError for a name that
// is none of them).
#include <string>
#include <utility>
#include <vector>

#include "dpstudy/error.hpp"
#include "dpstudy/run_config.hpp"

namespace dpstudy {
namespace {

template <typename E>
struct Names {
  std::vector<std::pair<E, const char*>> items;
  std::string name(E v) const {
    for (const auto& [e, n] : items) {
      if (e == v) return n;
    }
    return "?";
  }
  E parse(const std::string& option, const std::string& text) const {
    std::string allowed;
    for (const auto& [e, n] : items) {
      if (text == n) return e;
      allowed += (allowed.empty() ? "" : ", ") + std::string(n);
    }
    throw ConfigError(option, text, "is not one of: " + allowed);
  }
};

const Names<OverlapMode> kOverlapModes{{{OverlapMode::pool, "pool"}, {OverlapMode::spread, "spread"}}};
const Names<Granularity> kGranularities{
    {{Granularity::fine, "fine"}, {Granularity::medium, "medium"}, {Granularity::coarse, "coarse"}}};
const Names<DataOrder> kOrders{
    {{DataOrder::shuffled, "shuffled"}, {DataOrder::stored, "stored"}, {DataOrder::label, "label"}}};
const Names<ShardOwner> kOwners{{{ShardOwner::worker, "worker"}, {ShardOwner::group, "group"}}};
const Names<OptimizerKind> kOptimizers{
    {{OptimizerKind::sgd, "sgd"}, {OptimizerKind::momentum, "momentum"}, {OptimizerKind::nesterov, "nesterov"}}};
const Names<LrScaling> kScalings{{{LrScaling::none, "none"}, {LrScaling::linear, "linear"}, {LrScaling::sqrt, "sqrt"}}};
const Names<LrSchedule> kSchedules{{{LrSchedule::constant, "constant"},
                                    {LrSchedule::step, "step"},
                                    {LrSchedule::cosine, "cosine"},
                                    {LrSchedule::linear, "linear"}}};
const Names<WarmupStart> kWarmupStarts{{{WarmupStart::zero, "zero"}, {WarmupStart::base, "base"}}};
const Names<Augmentation> kAugmentations{{{Augmentation::none, "none"}, {Augmentation::crop_flip, "crop_flip"}}};
const Names<Pruning> kPrunings{{{Pruning::snip, "snip"}, {Pruning::random, "random"}}};
const Names<Precision> kPrecisions{{{Precision::fp32, "fp32"}, {Precision::tf32, "tf32"}, {Precision::bf16, "bf16"}}};
const Names<MemoryFormat> kMemoryFormats{
    {{MemoryFormat::contiguous, "contiguous"}, {MemoryFormat::channels_last, "channels_last"}}};

}  // namespace

std::string to_string(OverlapMode v) { return kOverlapModes.name(v); }
std::string to_string(Granularity v) { return kGranularities.name(v); }
std::string to_string(DataOrder v) { return kOrders.name(v); }
std::string to_string(ShardOwner v) { return kOwners.name(v); }
std::string to_string(OptimizerKind v) { return kOptimizers.name(v); }
std::string to_string(LrScaling v) { return kScalings.name(v); }
std::string to_string(LrSchedule v) { return kSchedules.name(v); }
std::string to_string(WarmupStart v) { return kWarmupStarts.name(v); }
std::string to_string(Augmentation v) { return kAugmentations.name(v); }
std::string to_string(Pruning v) { return kPrunings.name(v); }
std::string to_string(Precision v) { return kPrecisions.name(v); }
std::string to_string(MemoryFormat v) { return kMemoryFormats.name(v); }
OverlapMode parse_overlap_mode(const std::string& o, const std::string& t) { return kOverlapModes.parse(o, t); }
Granularity parse_granularity(const std::string& o, const std::string& t) { return kGranularities.parse(o, t); }
DataOrder parse_data_order(const std::string& o, const std::string& t) { return kOrders.parse(o, t); }
ShardOwner parse_shard_owner(const std::string& o, const std::string& t) { return kOwners.parse(o, t); }
OptimizerKind parse_optimizer(const std::string& o, const std::string& t) { return kOptimizers.parse(o, t); }
LrScaling parse_lr_scaling(const std::string& o, const std::string& t) { return kScalings.parse(o, t); }
LrSchedule parse_lr_schedule(const std::string& o, const std::string& t) { return kSchedules.parse(o, t); }
WarmupStart parse_warmup_start(const std::string& o, const std::string& t) { return kWarmupStarts.parse(o, t); }
Augmentation parse_augmentation(const std::string& o, const std::string& t) { return kAugmentations.parse(o, t); }
Pruning parse_pruning(const std::string& o, const std::string& t) { return kPrunings.parse(o, t); }
Precision parse_precision(const std::string& o, const std::string& t) { return kPrecisions.parse(o, t); }
MemoryFormat parse_memory_format(const std::string& o, const std::string& t) { return kMemoryFormats.parse(o, t); }

}  // namespace dpstudy
