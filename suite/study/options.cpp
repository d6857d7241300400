#include "dpstudy/options.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "dpstudy/error.hpp"

namespace po = boost::program_options;

namespace dpstudy {
namespace {

std::string period_text(int p) { return p == kNever ? "never" : std::to_string(p); }

std::string list_text(const std::vector<double>& v) {
  std::string s;
  char buf[32];
  for (double x : v) {
    std::snprintf(buf, sizeof buf, "%g", x);
    s += (s.empty() ? "" : ",") + std::string(buf);
  }
  return s;
}

// Boost prints a double default with 17 digits (0.90000000000000002).
template <class T>
po::typed_value<T>* with_default(T* target, const T& value) {
  return po::value(target)->default_value(value);
}
po::typed_value<double>* with_default(double* target, double value) {
  return po::value(target)->default_value(value, to_text(ConfigValue(value)));
}

}  // namespace

int parse_period(const std::string& option, const std::string& text) {
  if (text == "never") return kNever;
  try {
    std::size_t used = 0;
    const long v = std::stol(text, &used);
    if (used == text.size() && v >= 1 && v <= 1000000000) return int(v);
  } catch (const std::exception&) {
  }
  throw ConfigError(option, text, "must be a whole number of steps >= 1, or never");
}

std::uint64_t parse_seed(const std::string& option, const std::string& text) {
  const bool digits = !text.empty() && text.size() <= 20 &&
                      std::all_of(text.begin(), text.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
  if (digits) {
    errno = 0;
    const unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
    if (errno == 0) return std::uint64_t(v);
  }
  throw ConfigError(option, text, "must be a whole number from 0 to 18446744073709551615");
}

std::vector<double> parse_number_list(const std::string& option, const std::string& text) {
  std::vector<double> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    try {
      std::size_t used = 0;
      out.push_back(std::stod(item, &used));
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      throw ConfigError(option, text, "must be a comma-separated list of numbers");
    }
  }
  return out;
}

namespace {

// The "Evaluation and seeds" group of RunOptions, into `c` and `seed`.
po::options_description evaluation_options(RunConfig& c, const RunConfig& d, std::string& seed) {
  // clang-format off
  po::options_description eval("Evaluation and seeds");
  eval.add_options()
      ("eval_every", with_default(&c.eval_every, d.eval_every),
       "evaluate every this many steps (0: at the end of each epoch only)")
      ("eval_growth", with_default(&c.eval_growth, d.eval_growth),
       "also evaluate each time the step count has grown by this fraction since such an evaluation: log-spaced "
       "steps, so a step to a goal is resolved to that fraction at any batch size (0: off; e.g. 0.05)")
      ("eval_at_sync", with_default(&c.eval_at_sync, d.eval_at_sync),
       "local SGD: also evaluate right after every parameter averaging over all workers, where every worker holds "
       "the evaluated model (eval/synced, summary final_synced_test_accuracy)")
      ("test_every", with_default(&c.test_every, d.test_every),
       "with a validation split: evaluate the test split only every this many steps, at epoch ends, at the goal "
       "and at the end; other evaluations record NaN test metrics (0: at every evaluation)")
      ("eval_batch", with_default(&c.eval_batch, d.eval_batch), "batch size for evaluation")
      ("goal_error", with_default(&c.goal_error, d.goal_error),
       "steps-to-result: record the first evaluated step whose error (1 - accuracy; validation split if held out, "
       "else test) is at most this (0: none)")
      ("stop_at_goal", with_default(&c.stop_at_goal, d.stop_at_goal),
       "end the run once the goal is reached (after recording the step)")
      ("seed", po::value(&seed)->default_value(std::to_string(d.seed)), "run seed: initial weights and samplers")
      ("data_seed", with_default(&c.data_seed, d.data_seed),
       "data seed: order, assignment, validation split (-1: the run seed)");
  // clang-format on
  return eval;
}

}  // namespace

RunOptions::RunOptions(const RunConfig& d) : draft_(d), description_("Run options") {
  RunConfig& c = draft_;
  // The option tables keep one option to a line, as --help groups them.
  // clang-format off
  po::options_description data("Data");
  data.add_options()
      ("dataset", with_default(&c.dataset, d.dataset), "mnist, fashion-mnist or cifar10")
      ("validation_fraction", with_default(&c.validation_fraction, d.validation_fraction),
       "fraction of the training split held out for validation, [0, 1)")
      ("augment", po::value(&augment_)->default_value(to_string(d.augment)),
       "training augmentation: none, or crop_flip (random crops of a 4-pixel zero-padded image, horizontal flips)")
      ("precision", po::value(&precision_)->default_value(to_string(d.precision)),
       "arithmetic of the forward and backward passes: fp32; bf16 (autocast: matrix products and convolutions in "
       "bfloat16, weights, optimiser and averaging in float32; on the CPU it needs bf16 instructions); tf32 (CUDA: "
       "TF32 matrix products and convolutions)")
      ("memory_format", po::value(&memory_format_)->default_value(to_string(d.memory_format)),
       "convolution weights and inputs as contiguous (NCHW) or channels_last (NHWC, for models with convolutions)");
  po::options_description workers("Workers and data assignment");
  workers.add_options()
      ("workers", with_default(&c.workers, d.workers), "logical workers W")
      ("overlap", with_default(&c.overlap, d.overlap), "overlap alpha in [0, 1]: 0 disjoint shards, 1 full copies")
      ("overlap_mode", po::value(&overlap_mode_)->default_value(to_string(d.overlap_mode)),
       "pool (a shared fraction plus disjoint parts) or spread (own part plus draws from the others)")
      ("granularity", po::value(&granularity_)->default_value(to_string(d.granularity)),
       "unit of assignment: fine (samples), medium (blocks of block_size), coarse (one block per share)")
      ("block_size", with_default(&c.block_size, d.block_size), "samples per block (medium)")
      ("order", po::value(&order_)->default_value(to_string(d.order)),
       "order the units are cut from: shuffled (by the data seed), stored, label (non-IID)")
      ("dirichlet_alpha", with_default(&c.dirichlet_alpha, d.dirichlet_alpha),
       "label skew: deal each class's samples to the shard owners in proportions drawn from Dirichlet(alpha) "
       "(0.1: a few classes per owner; 100: near IID; 0: near-equal parts, no skew); needs granularity fine")
      ("shard_owner", po::value(&shard_owner_)->default_value(to_string(d.shard_owner)),
       "worker: one shard per worker; group: one per group of group_size workers, shared within it");
  po::options_description sync("Synchronisation");
  sync.add_options()
      ("sync_period", po::value(&sync_period_)->default_value(period_text(d.sync_period)),
       "H: 1 averages gradients every step; H > 1 averages parameters every H steps (local SGD); never")
      ("local_sgd_from_epoch", with_default(&c.local_sgd_from_epoch, d.local_sgd_from_epoch),
       "post-local SGD: synchronous (H = 1) before this epoch")
      ("group_size", with_default(&c.group_size, d.group_size), "G, workers per group; divides W")
      ("group_sync_period", po::value(&group_sync_period_)->default_value(period_text(d.group_sync_period)),
       "average within each group every this many steps, or never")
      ("average_momentum", with_default(&c.average_momentum, d.average_momentum),
       "also average momentum buffers at each parameter averaging")
      ("average_buffers", with_default(&c.average_buffers, d.average_buffers),
       "also average batch-norm running statistics at each parameter averaging");
  po::options_description opt("Optimiser");
  opt.add_options()
      ("optimizer", po::value(&optimizer_)->default_value(to_string(d.optimizer)), "sgd, momentum or nesterov")
      ("momentum", with_default(&c.momentum, d.momentum), "momentum factor, [0, 1)")
      ("weight_decay", with_default(&c.weight_decay, d.weight_decay), "L2 weight decay")
      ("batch_size", with_default(&c.batch_size, d.batch_size), "per-worker batch size b")
      ("epochs", with_default(&c.epochs, d.epochs), "epochs of floor(N / (W b)) steps")
      ("max_steps", with_default(&c.max_steps, d.max_steps),
       "step budget: end the run after this many steps, even mid-epoch, with the learning-rate schedule still laid "
       "out over the epochs, so its steps are those of the longer run (0: none)")
      ("sparsity", with_default(&c.sparsity, d.sparsity),
       "fraction of the prunable weights removed at initialisation, [0, 1); the mask stays fixed")
      ("pruning", po::value(&pruning_)->default_value(to_string(d.pruning)), "snip or random")
      ("snip_batches", with_default(&c.snip_batches, d.snip_batches),
       "SNIP: training mini-batches the connection sensitivities are summed over");
  po::options_description lr("Learning rate");
  lr.add_options()
      ("lr", with_default(&c.lr, d.lr), "base learning rate (or give batch_lr_ratio)")
      ("batch_lr_ratio", with_default(&c.batch_lr_ratio, d.batch_lr_ratio),
       "r: base rate = batch_size / r (instead of lr)")
      ("lr_scaling", po::value(&lr_scaling_)->default_value(to_string(d.lr_scaling)),
       "none, linear or sqrt in the global batch W b relative to lr_base_batch")
      ("lr_base_batch", with_default(&c.lr_base_batch, d.lr_base_batch),
       "reference global batch for the scaling rule (0: batch_size)")
      ("warmup_epochs", with_default(&c.warmup_epochs, d.warmup_epochs), "linear warm-up length")
      ("warmup_start", po::value(&warmup_start_)->default_value(to_string(d.warmup_start)),
       "warm-up from zero, or from the unscaled base rate (Goyal et al.)")
      ("schedule", po::value(&schedule_)->default_value(to_string(d.schedule)), "constant, step, cosine or linear")
      ("lr_milestones", po::value(&milestones_)->default_value(list_text(d.lr_milestones)),
       "step schedule: epochs at which the rate is multiplied by lr_decay, e.g. 150,225")
      ("lr_decay", with_default(&c.lr_decay, d.lr_decay), "step schedule: factor per milestone")
      ("lr_end_factor", with_default(&c.lr_end_factor, d.lr_end_factor),
       "cosine, linear: final rate as a fraction of the peak")
      ("lr_decay_steps", with_default(&c.lr_decay_steps, d.lr_decay_steps),
       "linear: steps from the end of warm-up to the end rate (0: to the last step)");
  // clang-format on
  description_.add(data).add(workers).add(sync).add(opt).add(lr).add(evaluation_options(c, d, seed_));
}

RunConfig RunOptions::resolve() const {
  RunConfig c = draft_;
  c.overlap_mode = parse_overlap_mode("overlap_mode", overlap_mode_);
  c.granularity = parse_granularity("granularity", granularity_);
  c.order = parse_data_order("order", order_);
  c.shard_owner = parse_shard_owner("shard_owner", shard_owner_);
  c.optimizer = parse_optimizer("optimizer", optimizer_);
  c.lr_scaling = parse_lr_scaling("lr_scaling", lr_scaling_);
  c.schedule = parse_lr_schedule("schedule", schedule_);
  c.warmup_start = parse_warmup_start("warmup_start", warmup_start_);
  c.augment = parse_augmentation("augment", augment_);
  c.precision = parse_precision("precision", precision_);
  c.memory_format = parse_memory_format("memory_format", memory_format_);
  c.pruning = parse_pruning("pruning", pruning_);
  c.sync_period = parse_period("sync_period", sync_period_);
  c.seed = parse_seed("seed", seed_);
  c.group_sync_period = parse_period("group_sync_period", group_sync_period_);
  c.lr_milestones = milestones_.empty() ? std::vector<double>{} : parse_number_list("lr_milestones", milestones_);
  validate(c);
  return c;
}

}  // namespace dpstudy
