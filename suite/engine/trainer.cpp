#include "dpstudy/trainer.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>

#include "dpstudy/device_memory.hpp"
#include "dpstudy/error.hpp"
#include "dpstudy/precision.hpp"
#include "dpstudy/pruning.hpp"
#include "dpstudy/rng.hpp"
#include "dpstudy/runtime_info.hpp"

namespace dpstudy {
namespace {

constexpr int kSnipSampler = 1 << 30;  // a sampler stream no worker index reaches
constexpr std::uint64_t kPruningStream = 5ull << 32;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace

Trainer::Trainer(RunConfig config, const ModelFactory& factory, const TrainingData& data, Communicator& comm,
                 Execution execution)
    : config_(std::move(config)), data_(data), comm_(comm) {
  validate(config_);
  const RunConfig& c = config_;
  const at::Device device = data_.train_x.device();
  check_precision(c.precision, device);
  apply_precision(c.precision, device);
  threads_ = execution.threads > 0 ? execution.threads : process_threads();
  const bool workers =
      resolve_parallelism(execution.parallel, comm_.local_workers(), threads_, device) == Parallelism::workers;
  side_by_side_ = workers && device.is_cpu();
  if (workers && device.is_cuda()) streams_ = std::make_unique<ReplicaStreams>(device);
  claim_threads();
  if (!data_.spec || data_.spec->name != c.dataset) {
    throw Error("Trainer: the data given is not the dataset '" + c.dataset + "' of the config");
  }
  if (comm_.world_workers() != c.workers) {
    throw Error("Trainer: the communicator has " + std::to_string(comm_.world_workers()) + " workers, the config " +
                std::to_string(c.workers));
  }
  DataSplit split = split_data(c, data_.train_y);
  train_idx_ = std::move(split.train);
  val_idx_ = std::move(split.val);
  shards_ = std::move(split.shards);
  assignment_ = split.stats;
  steps_per_epoch_ = std::int64_t(train_idx_.size()) / c.global_batch();

  // Every replica starts from the weights of one model built under the run seed.
  std::unique_lock<std::mutex> seeding(generator_lock());
  at::manual_seed(c.seed);
  auto build = [&] {
    std::shared_ptr<Model> m = factory();
    m->to(device);
    return std::make_unique<Replica>(m, c.memory_format);
  };
  eval_ = build();
  check_memory_format(c.memory_format, eval_->model());
  eval_->model().eval();
  const int first = comm_.first_local_worker();
  const std::int64_t rows = c.augment == Augmentation::crop_flip ? 4 : 1;
  step_in_ =
      std::make_unique<Upload>(std::vector<std::int64_t>{comm_.local_workers(), rows, c.batch_size}, at::kLong, device);
  const auto& shape = data_.train_x.sizes();
  for (int i = 0; i < comm_.local_workers(); ++i) {
    replicas_.push_back(build());
    replicas_.back()->copy_weights_from(*eval_);
    const int worker = first + i;
    samplers_.emplace_back(shard_of(worker), c.seed, worker);
    if (c.augment == Augmentation::crop_flip) {
      std::vector<double> fill;
      for (std::size_t ch = 0; ch < data_.spec->mean.size(); ++ch) fill.push_back(-data_.spec->mean[ch] / data_.spec->std[ch]);
      augmenters_.emplace_back(c.seed, worker, 4, fill);
    }
    std::vector<std::int64_t> xs(shape.begin(), shape.end());
    xs[0] = c.batch_size;
    batch_x_.push_back(at::empty(xs, data_.train_x.options()));
    batch_y_.push_back(at::empty({c.batch_size}, at::TensorOptions(at::kLong).device(device)));
    batch_aug_.push_back(at::empty_like(batch_x_.back()));
    Replica& r = *replicas_.back();
    params_.push_back(r.params());
    grads_.push_back(r.grads());
    momenta_.push_back(r.momentum());
    buffers_.push_back(r.buffers());
  }
  seeding.unlock();
  if (c.sparsity > 0) {
    // One mask for every worker, from the run seed: SNIP scores of the initial
    // weights on mini-batches of a sampler of its own, or random scores. With
    // the workers side by side LibTorch runs on one thread here too (claim_threads).
    const at::Tensor prunable = prunable_positions(*eval_);
    at::Tensor scores;
    if (c.pruning == Pruning::snip) {
      ShardSampler sampler(train_idx_, c.seed, kSnipSampler);
      std::vector<at::Tensor> xs, ys;
      at::Tensor idx = at::empty({c.batch_size}, at::kLong);
      for (std::int64_t b = 0; b < c.snip_batches; ++b) {
        sampler.next(idx.data_ptr<std::int64_t>(), c.batch_size);
        const at::Tensor on_device = idx.to(device);
        xs.push_back(in_format(data_.train_x.index_select(0, on_device)));
        ys.push_back(data_.train_y.index_select(0, on_device));
      }
      eval_->model().train();  // as in training (batch norm on batch statistics)
      scores = snip_scores(*eval_, xs, ys);
      eval_->model().eval();
    } else {
      Rng rng = Rng::stream(c.seed, kPruningStream);
      std::vector<double> u(std::size_t(prunable.numel()));
      for (auto& x : u) x = double(rng.next() >> 11);
      scores = at::tensor(u, at::kDouble).to(at::kFloat).to(device);
    }
    mask_ = top_k_mask(scores, prunable, c.sparsity);
    eval_->params().mul_(mask_);
    for (auto& r : replicas_) r->params().mul_(mask_);
    sparsity_ = sparsity_of(*eval_, mask_);
  }
  mean_ = at::empty_like(eval_->params());
  prepare_launches(execution);
  val_index_ = at::tensor(val_idx_, at::kLong).to(device);
  lr_ = std::make_unique<LearningRate>(c, steps_per_epoch_);
  sgd_ = {c.optimizer, c.momentum, c.weight_decay};
}

void Trainer::prepare_launches(const Execution& execution) {
  const at::Device device = data_.train_x.device();
  shared_process_ = execution.shared_process;
  read_every_ = execution.read_every > 0 ? execution.read_every : device.is_cpu() ? 1 : 64;
  const auto local = std::int64_t(replicas_.size());
  loss_now_ = at::zeros({local}, at::TensorOptions(at::kFloat).device(device));
  distance_now_ = at::zeros_like(loss_now_);
  loss_log_ = at::empty({read_every_, local}, loss_now_.options());
  distance_log_ = at::empty({4, local}, loss_now_.options());
  if (device.is_cuda() || execution.rate_on_device) rate_ = at::zeros({}, loss_now_.options());
  mean_on_host_ = comm_.mean_needs_host();
  if (resolve_cuda_graphs(execution.cuda_graphs, config_, device)) {
    graphs_ = std::make_unique<StepGraphs>(device);
  }
}

Trainer::~Trainer() = default;

std::mutex& Trainer::generator_lock() {
  static std::mutex lock;
  return lock;
}

const std::vector<std::int64_t>& Trainer::shard_of(int worker) const {
  const int owner = config_.shard_owner == ShardOwner::group ? worker / config_.group_size : worker;
  return shards_.at(std::size_t(owner));
}

double Trainer::peak_gpu_so_far() const {
  const double now = gpu_peak_reset_ ? peak_device_memory_mib(data_.train_x.device()) : kNaN;
  return std::isnan(now) ? kNaN : std::max(now, gpu_peak_before_mib_);
}

double Trainer::peak_memory_so_far() const {
  const double now = peak_reset_ ? peak_memory_mib() : kNaN;
  return std::isnan(now) ? kNaN : std::max(now, peak_before_mib_);
}

}  // namespace dpstudy
