// Everything that defines one training run, resolved and validated. Options
// flow one way: command line / study file -> RunConfig (immutable once made by
// resolve()) -> the engine. The formulas are in docs/engine.md.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace dpstudy {

enum class OverlapMode { pool, spread };
enum class Granularity { fine, medium, coarse };
enum class DataOrder { shuffled, stored, label };
enum class ShardOwner { worker, group };
enum class OptimizerKind { sgd, momentum, nesterov };
enum class LrScaling { none, linear, sqrt };
enum class LrSchedule { constant, step, cosine, linear };
enum class WarmupStart { zero, base };
enum class Augmentation { none, crop_flip };
enum class Pruning { snip, random };
// The arithmetic of a run's forward and backward passes (docs/engine.md, "Precision").
enum class Precision { fp32, tf32, bf16 };
// How 4-D tensors (a convolution's weights and inputs) lie in memory (docs/engine.md, "Memory format").
enum class MemoryFormat { contiguous, channels_last };

// A parameter's value, typed as it is stored (HDF5 attributes, index columns).
using ConfigValue = std::variant<std::int64_t, double, std::string>;
// The text form, as on the command line ("never" for kNever periods is kept
// by the caller); doubles in the shortest form that reads back exactly.
std::string to_text(const ConfigValue& v);
using KeyValues = std::vector<std::pair<std::string, ConfigValue>>;
// Keys added after the first release, holding the value that reproduces the
// behaviour from before they existed: run ids and checkpoints leave them out,
// so that results and checkpoints made before keep their ids and stay usable.
bool added_later_at_old_default(const std::string& key, const ConfigValue& value);

// Whether a config's shards differ between assignment schemes 1 and 2 (coarse
// units, pool overlap > 0, several shard owners: the pool drawn at random, not
// from the start of the order). Run ids of such configs carry the scheme, so
// that scheme-1 files are not taken for them.
bool pool_drawn_anew(const KeyValues& values);

// Sync periods: a whole number of steps >= 1, or never.
constexpr int kNever = -1;

struct RunConfig {
  // Data
  std::string dataset = "mnist";
  double validation_fraction = 0.0;  // held out of the training split, in [0, 1)
  Augmentation augment = Augmentation::none;  // crop_flip: 4-pixel padded random crops and flips
  // fp32; bf16: autocast, weights, optimiser and averaging in float32; tf32: CUDA's TF32 products
  Precision precision = Precision::fp32;
  MemoryFormat memory_format = MemoryFormat::contiguous;
  // Workers and assignment
  int workers = 1;
  double overlap = 0.0;  // alpha in [0, 1]
  OverlapMode overlap_mode = OverlapMode::pool;
  Granularity granularity = Granularity::fine;
  std::int64_t block_size = 64;  // samples per unit with medium granularity
  DataOrder order = DataOrder::shuffled;
  double dirichlet_alpha = 0.0;  // > 0: each class dealt in Dirichlet(alpha) proportions (fine units)
  ShardOwner shard_owner = ShardOwner::worker;
  // Synchronisation
  int sync_period = 1;               // H >= 1, or kNever (independent workers)
  int local_sgd_from_epoch = 0;      // synchronous (H = 1) before this epoch
  int group_size = 1;                // G, divides workers
  int group_sync_period = kNever;    // average within groups every this many steps
  bool average_momentum = false;     // also average momentum buffers at each sync
  bool average_buffers = true;       // also average batch-norm running statistics
  // Optimisation
  OptimizerKind optimizer = OptimizerKind::momentum;
  double momentum = 0.9;
  double weight_decay = 0.0;
  std::int64_t batch_size = 64;      // per worker
  double lr = 0.0;                   // base rate; 0 = from batch_lr_ratio
  double batch_lr_ratio = 0.0;       // r: base rate = batch_size / r; 0 = use lr
  LrScaling lr_scaling = LrScaling::none;
  std::int64_t lr_base_batch = 0;    // reference global batch for scaling; 0 = batch_size
  double warmup_epochs = 0.0;
  WarmupStart warmup_start = WarmupStart::zero;
  LrSchedule schedule = LrSchedule::constant;
  std::vector<double> lr_milestones;  // epochs, for the step schedule
  double lr_decay = 0.1;              // factor per milestone (step schedule)
  double lr_end_factor = 0.0;         // cosine / linear: final rate = factor * peak rate
  std::int64_t lr_decay_steps = 0;    // linear: steps from the end of warm-up to the end rate; 0 = to the end
  int epochs = 2;
  std::int64_t max_steps = 0;  // step budget: the run ends there, even mid-epoch, the schedule still
                               // laid out over `epochs`; 0 = none
  // Sparsity at initialisation (docs/engine.md)
  double sparsity = 0.0;             // fraction of prunable weights removed, [0, 1)
  Pruning pruning = Pruning::snip;
  std::int64_t snip_batches = 10;    // mini-batches the SNIP scores are summed over
  // Evaluation
  std::int64_t eval_every = 0;       // steps; 0 = only at the end of each epoch
  double eval_growth = 0;            // also at steps growing by this fraction (growth_evaluation_after); 0 = off
  bool eval_at_sync = false;         // also right after every parameter averaging over all workers
  std::int64_t test_every = 0;       // steps; with a validation split, the test split only every this many
                                     // steps, at epoch ends, at the goal and at the end; 0 = at every evaluation
  std::int64_t eval_batch = 1000;
  double goal_error = 0;             // steps-to-result: the error (1 - accuracy) to reach; 0 = none
  bool stop_at_goal = false;         // end the run at the evaluation that reaches the goal
  // Seeds
  std::uint64_t seed = 1;            // initial weights, samplers
  std::int64_t data_seed = -1;       // order, assignment, validation split; -1 = seed

  std::uint64_t resolved_data_seed() const { return data_seed < 0 ? seed : std::uint64_t(data_seed); }
  int shard_owners() const { return shard_owner == ShardOwner::group ? workers / group_size : workers; }
  // The samples of one step over all workers: a run's cost is its steps times this.
  std::int64_t global_batch() const { return std::int64_t(workers) * batch_size; }
  // The peak learning rate after the scaling rule (docs/engine.md).
  double peak_lr() const;
  // The steps the run trains: `epochs` epochs, cut at `max_steps`.
  std::int64_t run_steps(std::int64_t steps_per_epoch) const;
  // Every parameter as (key, typed value), in a fixed order: printed at run
  // start, the basis of run ids, and the stored config. Periods are integers
  // (-1 = never), booleans 0/1, enums and lists their text.
  KeyValues key_values() const;
  // The keys whose value changes nothing in this run, each with the setting
  // that makes it so ("optimizer = sgd" for momentum): studies warn when a key
  // given has no effect, or makes runs that train alike (docs/studies.md).
  std::vector<std::pair<std::string, std::string>> inert_keys() const;
};

// RunConfig::inert_keys()'s rules on values as text ("sgd", "1", "0"), for
// results read back (dpstudy-analyze); the rules that need a key `text_of`
// does not know (nullopt) are left out.
std::vector<std::pair<std::string, std::string>> inert_keys(
    const std::function<std::optional<std::string>(const std::string&)>& text_of);

// The same training in one form: every inert key (inert_keys()) set to its
// value in a default RunConfig, until none is left to set. Configs with the
// same canonical form train with the same bits (the unit test
// Training.KeysNamedInertChangeNoBit proves each rule), so a study trains them
// once, under one run id (docs/studies.md, "Shared runs").
RunConfig canonical(const RunConfig& config);

// Throws ConfigError naming the option, the value and what is allowed.
void validate(const RunConfig& config);
// eval_growth's steps, log-spaced so that a step to a goal is resolved to a
// fixed fraction of itself at any batch size: s_0 = 1, s_(k+1) = s_k + max(1,
// floor(growth s_k)). Returns the first of them after `step`. One product and
// a floor per point, so every platform finds the same steps.
std::int64_t growth_evaluation_after(std::int64_t step, double growth);
// The samples left for training from `total` after the validation split.
std::int64_t training_samples(const RunConfig& config, std::int64_t total);
// Throws ConfigError on batch_size unless one step of workers x batch_size fits in the
// training samples of `total`; `point` names the sweep point, if any ("for workers=4").
void check_global_batch(const RunConfig& config, std::int64_t total, const std::string& point = "");

// Names <-> enums; parse_* throw ConfigError naming `option` and the choices.
std::string to_string(OverlapMode v);
std::string to_string(Granularity v);
std::string to_string(DataOrder v);
std::string to_string(ShardOwner v);
std::string to_string(OptimizerKind v);
std::string to_string(LrScaling v);
std::string to_string(LrSchedule v);
std::string to_string(WarmupStart v);
std::string to_string(Augmentation v);
std::string to_string(Pruning v);
std::string to_string(Precision v);
std::string to_string(MemoryFormat v);
OverlapMode parse_overlap_mode(const std::string& option, const std::string& text);
Granularity parse_granularity(const std::string& option, const std::string& text);
DataOrder parse_data_order(const std::string& option, const std::string& text);
ShardOwner parse_shard_owner(const std::string& option, const std::string& text);
OptimizerKind parse_optimizer(const std::string& option, const std::string& text);
LrScaling parse_lr_scaling(const std::string& option, const std::string& text);
LrSchedule parse_lr_schedule(const std::string& option, const std::string& text);
WarmupStart parse_warmup_start(const std::string& option, const std::string& text);
Augmentation parse_augmentation(const std::string& option, const std::string& text);
Pruning parse_pruning(const std::string& option, const std::string& text);
Precision parse_precision(const std::string& option, const std::string& text);
MemoryFormat parse_memory_format(const std::string& option, const std::string& text);

}  // namespace dpstudy
