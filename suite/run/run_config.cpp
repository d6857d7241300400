#include "dpstudy/run_config.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "dpstudy/dataset_spec.hpp"
#include "dpstudy/error.hpp"

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
const Names<OptimizerKind> kOptimizers{{{OptimizerKind::sgd, "sgd"},
                                        {OptimizerKind::momentum, "momentum"},
                                        {OptimizerKind::nesterov, "nesterov"}}};
const Names<LrScaling> kScalings{
    {{LrScaling::none, "none"}, {LrScaling::linear, "linear"}, {LrScaling::sqrt, "sqrt"}}};
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

// The shortest text that reads back as the same double.
std::string num(double v) {
  char buf[40];
  for (int precision = 15; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

void require(bool ok, const std::string& option, const std::string& value, const std::string& allowed) {
  if (!ok) throw ConfigError(option, value, allowed);
}

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

double RunConfig::peak_lr() const {
  const double base = lr > 0 ? lr : double(batch_size) / batch_lr_ratio;
  const double reference = double(lr_base_batch > 0 ? lr_base_batch : batch_size);
  const double k = double(workers) * double(batch_size) / reference;
  switch (lr_scaling) {
    case LrScaling::linear: return base * k;
    case LrScaling::sqrt: return base * std::sqrt(k);
    case LrScaling::none: break;
  }
  return base;
}

std::vector<std::pair<std::string, std::string>> RunConfig::inert_keys() const {
  const KeyValues values = key_values();
  return dpstudy::inert_keys([&](const std::string& key) -> std::optional<std::string> {
    for (const auto& [k, v] : values) {
      if (k == key) return to_text(v);
    }
    return std::nullopt;
  });
}

std::vector<std::pair<std::string, std::string>> inert_keys(
    const std::function<std::optional<std::string>(const std::string&)>& text_of) {
  std::vector<std::pair<std::string, std::string>> out;
  const auto inert = [&](const char* key, const std::string& because) { out.emplace_back(key, because); };
  const auto is = [&](const char* key, const char* value) {
    const auto t = text_of(key);
    return t && *t == value;
  };
  const auto zero = [&](const char* key) {
    const auto t = text_of(key);
    char* end = nullptr;
    return t && !t->empty() && std::strtod(t->c_str(), &end) == 0 && *end == '\0';
  };
  if (is("optimizer", "sgd")) inert("momentum", "optimizer = sgd");
  if (const auto schedule = text_of("schedule")) {
    const std::string by_schedule = "schedule = " + *schedule;
    if (*schedule != "step") {
      inert("lr_milestones", by_schedule);
      inert("lr_decay", by_schedule);
    }
    if (*schedule == "constant" || *schedule == "step") inert("lr_end_factor", by_schedule);
    if (*schedule != "linear") inert("lr_decay_steps", by_schedule);
  }
  if (is("lr_scaling", "none")) inert("lr_base_batch", "lr_scaling = none");
  if (zero("warmup_epochs")) inert("warmup_start", "warmup_epochs = 0");
  if (is("sync_period", "1")) {  // every step synchronous, whatever the epoch or the groups
    inert("local_sgd_from_epoch", "sync_period = 1");
    inert("group_sync_period", "sync_period = 1");
  } else if (is("group_size", "1")) {
    inert("group_sync_period", "group_size = 1");
  }
  if (zero("sparsity")) {
    inert("pruning", "sparsity = 0");
    inert("snip_batches", "sparsity = 0");
  } else if (const auto pruning = text_of("pruning"); pruning && text_of("sparsity") && *pruning != "snip") {
    inert("snip_batches", "pruning = " + *pruning);
  }
  if (const auto granularity = text_of("granularity"); granularity && *granularity != "medium") {
    inert("block_size", "granularity = " + *granularity);
  }
  if (is("optimizer", "sgd")) inert("average_momentum", "optimizer = sgd");  // its momentum stays zero
  if (zero("overlap")) inert("overlap_mode", "overlap = 0");
  // One worker: no other replica to average with, and one shard, which pool
  // overlap lists in the same order at any alpha (docs/engine.md). With
  // eval_at_sync its period sets the evaluations, so it stays.
  if (is("workers", "1")) {
    const std::string one = "workers = 1";
    if (!is("eval_at_sync", "1")) {
      inert("sync_period", one);
      inert("local_sgd_from_epoch", one);
    }
    inert("average_momentum", one);
    inert("overlap", one);
    inert("overlap_mode", one);
    inert("dirichlet_alpha", one);
    inert("shard_owner", one);
  } else if (const auto group = text_of("group_size");
             group && is("shard_owner", "group") && text_of("workers") == group) {
    const std::string one = "shard_owner = group with group_size = workers";  // one shard for all
    inert("overlap", one);
    inert("overlap_mode", one);
    inert("dirichlet_alpha", one);
  }
  // One reason per key: the first rule that names it.
  std::vector<std::pair<std::string, std::string>> unique;
  for (auto& kv : out) {
    if (std::none_of(unique.begin(), unique.end(), [&](const auto& u) { return u.first == kv.first; })) {
      unique.push_back(std::move(kv));
    }
  }
  return unique;
}

namespace {

// Sets `key` of `c` to its value in a default RunConfig; false when it held it.
bool reset_key(RunConfig& c, const std::string& key) {
  static const RunConfig d;
  const auto set = [](auto& field, const auto& value) {
    if (field == value) return false;
    field = value;
    return true;
  };
  if (key == "momentum") return set(c.momentum, d.momentum);
  if (key == "lr_milestones") return set(c.lr_milestones, d.lr_milestones);
  if (key == "lr_decay") return set(c.lr_decay, d.lr_decay);
  if (key == "lr_end_factor") return set(c.lr_end_factor, d.lr_end_factor);
  if (key == "lr_decay_steps") return set(c.lr_decay_steps, d.lr_decay_steps);
  if (key == "lr_base_batch") return set(c.lr_base_batch, d.lr_base_batch);
  if (key == "warmup_start") return set(c.warmup_start, d.warmup_start);
  if (key == "local_sgd_from_epoch") return set(c.local_sgd_from_epoch, d.local_sgd_from_epoch);
  if (key == "group_sync_period") return set(c.group_sync_period, d.group_sync_period);
  if (key == "pruning") return set(c.pruning, d.pruning);
  if (key == "snip_batches") return set(c.snip_batches, d.snip_batches);
  if (key == "block_size") return set(c.block_size, d.block_size);
  if (key == "average_momentum") return set(c.average_momentum, d.average_momentum);
  if (key == "overlap_mode") return set(c.overlap_mode, d.overlap_mode);
  if (key == "sync_period") return set(c.sync_period, d.sync_period);
  if (key == "overlap") return set(c.overlap, d.overlap);
  if (key == "dirichlet_alpha") return set(c.dirichlet_alpha, d.dirichlet_alpha);
  if (key == "shard_owner") return set(c.shard_owner, d.shard_owner);
  throw Error("canonical: no canonical value for the inert key '" + key + "'");
}

}  // namespace

RunConfig canonical(const RunConfig& c) {
  RunConfig out = c;
  // A key set to its canonical value may make others inert (workers = 1 sets
  // sync_period to 1, which leaves local_sgd_from_epoch without effect): repeat.
  for (int round = 0; round < 8; ++round) {
    bool changed = false;
    for (const auto& [key, why] : out.inert_keys()) changed = reset_key(out, key) || changed;
    if (!changed) return out;
  }
  throw Error("canonical: the inert-key rules do not settle");
}

std::string to_text(const ConfigValue& v) {
  if (const auto* i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) return num(*d);
  return std::get<std::string>(v);
}

KeyValues RunConfig::key_values() const {
  std::string milestones;
  for (double m : lr_milestones) milestones += (milestones.empty() ? "" : ",") + num(m);
  using I = std::int64_t;
  return {
      {"dataset", dataset},
      {"validation_fraction", validation_fraction},
      {"augment", to_string(augment)},
      {"precision", to_string(precision)},
      {"memory_format", to_string(memory_format)},
      {"workers", I(workers)},
      {"overlap", overlap},
      {"overlap_mode", to_string(overlap_mode)},
      {"granularity", to_string(granularity)},
      {"block_size", I(block_size)},
      {"order", to_string(order)},
      {"dirichlet_alpha", dirichlet_alpha},
      {"shard_owner", to_string(shard_owner)},
      {"sync_period", I(sync_period)},
      {"local_sgd_from_epoch", I(local_sgd_from_epoch)},
      {"group_size", I(group_size)},
      {"group_sync_period", I(group_sync_period)},
      {"average_momentum", I(average_momentum)},
      {"average_buffers", I(average_buffers)},
      {"optimizer", to_string(optimizer)},
      {"momentum", momentum},
      {"weight_decay", weight_decay},
      {"batch_size", I(batch_size)},
      {"lr", lr},
      {"batch_lr_ratio", batch_lr_ratio},
      {"lr_scaling", to_string(lr_scaling)},
      {"lr_base_batch", I(lr_base_batch)},
      {"warmup_epochs", warmup_epochs},
      {"warmup_start", to_string(warmup_start)},
      {"schedule", to_string(schedule)},
      {"lr_milestones", milestones},
      {"lr_decay", lr_decay},
      {"lr_end_factor", lr_end_factor},
      {"lr_decay_steps", I(lr_decay_steps)},
      {"epochs", I(epochs)},
      {"sparsity", sparsity},
      {"pruning", to_string(pruning)},
      {"snip_batches", I(snip_batches)},
      {"eval_every", I(eval_every)},
      {"eval_growth", eval_growth},
      {"eval_at_sync", I(eval_at_sync)},
      {"test_every", I(test_every)},
      {"eval_batch", I(eval_batch)},
      {"goal_error", goal_error},
      {"stop_at_goal", I(stop_at_goal)},
      {"seed", I(seed)},
      {"data_seed", I(data_seed)},
  };
}

bool added_later_at_old_default(const std::string& key, const ConfigValue& value) {
  static const std::map<std::string, std::string> later_keys = {{"test_every", "0"},   {"eval_at_sync", "0"},
                                                                {"eval_growth", "0"},  {"dirichlet_alpha", "0"},
                                                                {"precision", "fp32"}, {"memory_format", "contiguous"}};
  const auto later = later_keys.find(key);
  return later != later_keys.end() && to_text(value) == later->second;
}

bool pool_drawn_anew(const KeyValues& values) {
  const auto text = [&](const char* key) {
    for (const auto& [k, v] : values) {
      if (k == key) return to_text(v);
    }
    return std::string();
  };
  const double overlap = std::strtod(text("overlap").c_str(), nullptr);
  const long workers = std::strtol(text("workers").c_str(), nullptr, 10);
  const long group = std::strtol(text("group_size").c_str(), nullptr, 10);
  const long owners = text("shard_owner") == "group" && group > 0 ? workers / group : workers;
  return text("granularity") == "coarse" && text("overlap_mode") == "pool" && overlap > 0 && owners > 1;
}

std::int64_t training_samples(const RunConfig& c, std::int64_t total) {
  return total - std::llround(c.validation_fraction * double(total));
}

void check_global_batch(const RunConfig& c, std::int64_t total, const std::string& point) {
  const std::int64_t n = training_samples(c, total), global = std::int64_t(c.workers) * c.batch_size;
  if (n / global > 0) return;
  // A large validation split is as likely the slip as the batch: say it took the samples.
  const std::string of = c.validation_fraction > 0 ? " left of " + std::to_string(total) + " by validation_fraction " +
                                                         num(c.validation_fraction)
                                                   : std::string();
  throw ConfigError("batch_size", std::to_string(c.batch_size),
                    "is too large" + (point.empty() ? std::string() : " " + point) + ": workers x batch_size = " +
                        std::to_string(global) + " exceeds the " + std::to_string(n) + " training samples" + of);
}

void validate(const RunConfig& c) {
  for (const auto& [key, value] : c.key_values()) {  // inf passes every range check below
    if (const auto* d = std::get_if<double>(&value); d && !std::isfinite(*d)) {
      throw ConfigError(key, num(*d), "must be a finite number");
    }
  }
  try {
    dataset_spec(c.dataset);
  } catch (const UsageError&) {
    std::string names;
    for (const auto& s : dataset_specs()) names += (names.empty() ? "" : ", ") + s.name;
    throw ConfigError("dataset", c.dataset, "is not a known dataset: " + names);
  }
  require(c.validation_fraction >= 0 && c.validation_fraction < 1, "validation_fraction",
          num(c.validation_fraction), "must be in [0, 1)");
  require(c.workers >= 1 && c.workers <= 65536, "workers", std::to_string(c.workers),
          "must be a whole number from 1 to 65536");
  require(c.overlap >= 0 && c.overlap <= 1, "overlap", num(c.overlap),
          "must be in [0, 1] (0 = disjoint shards, 1 = every worker sees all data)");
  require(c.block_size >= 1, "block_size", std::to_string(c.block_size), "must be at least 1");
  require(c.dirichlet_alpha >= 0, "dirichlet_alpha", num(c.dirichlet_alpha),
          "must be >= 0 (0: near-equal parts; > 0: each class dealt in Dirichlet(alpha) proportions)");
  require(c.dirichlet_alpha == 0 || c.granularity == Granularity::fine, "dirichlet_alpha", num(c.dirichlet_alpha),
          "deals single samples of each class: it needs granularity = fine, not " + to_string(c.granularity));
  // Fine units are single samples dealt in a seeded random order, so a label-sorted
  // set gives every worker every class: a study of skew that would study nothing.
  require(c.order != DataOrder::label || c.granularity != Granularity::fine, "order", "label",
          "skews nothing with granularity = fine (single samples are dealt at random, so every worker gets "
          "every class): give granularity = coarse (one label-sorted run per worker) or medium (label-sorted "
          "blocks of block_size), or dirichlet_alpha > 0 with order = shuffled; for an IID arm beside them, "
          "use order = shuffled");
  require(c.sync_period >= 1 || c.sync_period == kNever, "sync_period", std::to_string(c.sync_period),
          "must be a whole number of steps >= 1, or never");
  require(c.group_sync_period >= 1 || c.group_sync_period == kNever, "group_sync_period",
          std::to_string(c.group_sync_period), "must be a whole number of steps >= 1, or never");
  require(c.local_sgd_from_epoch >= 0, "local_sgd_from_epoch", std::to_string(c.local_sgd_from_epoch),
          "must be >= 0");
  require(c.group_size >= 1 && c.workers % c.group_size == 0, "group_size", std::to_string(c.group_size),
          "must divide workers (" + std::to_string(c.workers) + ")");
  require(c.momentum >= 0 && c.momentum < 1, "momentum", num(c.momentum), "must be in [0, 1)");
  require(c.weight_decay >= 0, "weight_decay", num(c.weight_decay), "must be >= 0");
  require(c.batch_size >= 1, "batch_size", std::to_string(c.batch_size), "must be at least 1");
  require(c.lr >= 0, "lr", num(c.lr), "must be > 0");
  require(c.batch_lr_ratio >= 0, "batch_lr_ratio", num(c.batch_lr_ratio), "must be > 0");
  if (c.lr > 0 && c.batch_lr_ratio > 0) {
    throw ConfigError("batch_lr_ratio", num(c.batch_lr_ratio),
                      "cannot be combined with --lr " + num(c.lr) + ": give one of the two");
  }
  if (c.lr == 0 && c.batch_lr_ratio == 0) {
    throw ConfigError("lr", "0",
                      "and batch_lr_ratio 0 leave the learning rate unset: give --lr > 0 or --batch_lr_ratio > 0");
  }
  require(c.lr_base_batch >= 0, "lr_base_batch", std::to_string(c.lr_base_batch), "must be >= 0");
  require(c.epochs >= 1, "epochs", std::to_string(c.epochs), "must be at least 1");
  require(c.warmup_epochs >= 0 && c.warmup_epochs <= c.epochs, "warmup_epochs", num(c.warmup_epochs),
          "must be in [0, epochs] (epochs " + std::to_string(c.epochs) + ")");
  for (std::size_t i = 0; i < c.lr_milestones.size(); ++i) {
    require(c.lr_milestones[i] > 0 && (i == 0 || c.lr_milestones[i] > c.lr_milestones[i - 1]),
            "lr_milestones", num(c.lr_milestones[i]),
            "must be increasing epochs > 0" + (i == 0 ? std::string() : " (after " + num(c.lr_milestones[i - 1]) + ")"));
  }
  require(c.lr_decay > 0, "lr_decay", num(c.lr_decay), "must be > 0");
  require(c.lr_end_factor >= 0 && c.lr_end_factor <= 1, "lr_end_factor", num(c.lr_end_factor),
          "must be in [0, 1]");
  require(c.lr_decay_steps >= 0, "lr_decay_steps", std::to_string(c.lr_decay_steps), "must be >= 0");
  require(c.sparsity >= 0 && c.sparsity < 1, "sparsity", num(c.sparsity),
          "must be in [0, 1) (0 = dense, 0.9 = 90 % of the prunable weights removed)");
  require(c.snip_batches >= 1, "snip_batches", std::to_string(c.snip_batches), "must be at least 1");
  require(c.eval_every >= 0, "eval_every", std::to_string(c.eval_every),
          "must be >= 0 (0 = at the end of each epoch only)");
  require(c.eval_growth >= 0 && c.eval_growth <= 10, "eval_growth", num(c.eval_growth),
          "must be in [0, 10] (0 = off; 0.05 also evaluates each time the step count has grown by 5 %)");
  require(c.test_every >= 0, "test_every", std::to_string(c.test_every),
          "must be >= 0 (0 = the test split at every evaluation)");
  require(c.eval_batch >= 1, "eval_batch", std::to_string(c.eval_batch), "must be at least 1");
  require(c.data_seed >= -1, "data_seed", std::to_string(c.data_seed), "must be -1 (the run seed) or a seed >= 0");
  require(c.goal_error >= 0 && c.goal_error < 1, "goal_error", num(c.goal_error),
          "must be in [0, 1) (an error rate, e.g. 0.02 for 98 % accuracy; 0 = no goal)");
  require(!c.stop_at_goal || c.goal_error > 0, "stop_at_goal", "true", "needs a --goal_error");
}

std::int64_t growth_evaluation_after(std::int64_t step, double growth) {
  std::int64_t s = 1;
  while (s <= step) s += std::max<std::int64_t>(1, std::int64_t(std::floor(growth * double(s))));
  return s;
}

}  // namespace dpstudy
