// A run's config checked on its own (validate) and against its data's size
// (W b <= N): each error names the option, its value and what was expected.
#include <cmath>
#include <string>

#include "dpstudy/dataset_spec.hpp"
#include "dpstudy/error.hpp"
#include "dpstudy/run_config.hpp"

namespace dpstudy {
namespace {

// As a study file or run file spells it: the shortest text that reads back as the same double.
std::string num(double v) { return to_text(v); }

void require(bool ok, const std::string& option, const std::string& value, const std::string& allowed) {
  if (!ok) throw ConfigError(option, value, allowed);
}

}  // namespace

std::int64_t training_samples(const RunConfig& c, std::int64_t total) {
  return total - std::llround(c.validation_fraction * double(total));
}

void check_global_batch(const RunConfig& c, std::int64_t total, const std::string& point) {
  const std::int64_t n = training_samples(c, total), global = c.global_batch();
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
  require(c.validation_fraction >= 0 && c.validation_fraction < 1, "validation_fraction", num(c.validation_fraction),
          "must be in [0, 1)");
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
  require(c.local_sgd_from_epoch >= 0, "local_sgd_from_epoch", std::to_string(c.local_sgd_from_epoch), "must be >= 0");
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
  require(c.max_steps >= 0, "max_steps", std::to_string(c.max_steps), "must be >= 0 (0 = no step budget)");
  require(c.warmup_epochs >= 0 && c.warmup_epochs <= c.epochs, "warmup_epochs", num(c.warmup_epochs),
          "must be in [0, epochs] (epochs " + std::to_string(c.epochs) + ")");
  for (std::size_t i = 0; i < c.lr_milestones.size(); ++i) {
    require(
        c.lr_milestones[i] > 0 && (i == 0 || c.lr_milestones[i] > c.lr_milestones[i - 1]), "lr_milestones",
        num(c.lr_milestones[i]),
        "must be increasing epochs > 0" + (i == 0 ? std::string() : " (after " + num(c.lr_milestones[i - 1]) + ")"));
  }
  require(c.lr_decay > 0, "lr_decay", num(c.lr_decay), "must be > 0");
  require(c.lr_end_factor >= 0 && c.lr_end_factor <= 1, "lr_end_factor", num(c.lr_end_factor), "must be in [0, 1]");
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

}  // namespace dpstudy
