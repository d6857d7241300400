// What a run is: its config as keys and values (a run id's input), the keys
// a config leaves without effect (inert) and its canonical form, and the
// evaluation grid. Option names: run_config_names.cpp; checks: run_checks.cpp.
#include "dpstudy/run_config.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "dpstudy/error.hpp"

namespace dpstudy {
namespace {

// The shortest text that reads back as the same double.
std::string num(double v) {
  char buf[40];
  for (int precision = 15; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

}  // namespace

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

std::int64_t RunConfig::run_steps(std::int64_t steps_per_epoch) const {
  const std::int64_t all = steps_per_epoch * epochs;
  return max_steps > 0 ? std::min(all, max_steps) : all;
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
      {"max_steps", I(max_steps)},
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
  static const std::map<std::string, std::string> later_keys = {
      {"test_every", "0"}, {"eval_at_sync", "0"}, {"eval_growth", "0"},           {"dirichlet_alpha", "0"},
      {"max_steps", "0"},  {"precision", "fp32"}, {"memory_format", "contiguous"}};
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

std::int64_t growth_evaluation_after(std::int64_t step, double growth) {
  std::int64_t s = 1;
  while (s <= step) s += std::max<std::int64_t>(1, std::int64_t(std::floor(growth * double(s))));
  return s;
}

}  // namespace dpstudy
