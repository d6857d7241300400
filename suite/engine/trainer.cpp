#include "dpstudy/trainer.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <mutex>

#include "dpstudy/assignment.hpp"
#include "dpstudy/device_memory.hpp"
#include "dpstudy/error.hpp"
#include "dpstudy/fault.hpp"
#include "dpstudy/precision.hpp"
#include "dpstudy/pruning.hpp"
#include "dpstudy/rng.hpp"
#include "dpstudy/runtime_info.hpp"
#include "dpstudy/stop.hpp"

namespace dpstudy {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

constexpr std::uint64_t kValidationStream = 3;  // a stream of the data seed (see assignment.cpp)
constexpr int kSnipSampler = 1 << 30;            // a sampler stream no worker index reaches
constexpr std::uint64_t kPruningStream = 5ull << 32;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace

at::Tensor image_tensor(const Dataset& d) {
  const DatasetSpec& s = *d.spec;
  // Only read: every use copies (normalize_images' conversion to float first of all).
  return at::from_blob(const_cast<std::uint8_t*>(d.images.data()), {d.size(), s.channels, s.height, s.width},
                       at::kByte);
}

at::Tensor label_tensor(const Dataset& d) { return at::tensor(at::ArrayRef<std::int64_t>(d.labels), at::kLong); }

at::Tensor normalize_images(const at::Tensor& images_u8, const DatasetSpec& spec) {
  const auto c = std::int64_t(spec.mean.size());
  at::Tensor mean = at::tensor(std::vector<float>(spec.mean.begin(), spec.mean.end())).view({1, c, 1, 1});
  at::Tensor stdev = at::tensor(std::vector<float>(spec.std.begin(), spec.std.end())).view({1, c, 1, 1});
  return images_u8.to(at::kFloat).mul_(1.0 / 255.0).sub_(mean).div_(stdev);
}

TrainingData prepare_data(const Dataset& train, const Dataset& test, const at::Device& device) {
  TrainingData d;
  d.spec = train.spec;
  d.train_x = normalize_images(image_tensor(train), *train.spec).to(device);
  d.train_y = label_tensor(train).to(device);
  d.test_x = normalize_images(image_tensor(test), *test.spec).to(device);
  d.test_y = label_tensor(test).to(device);
  d.files = train.files;
  d.files.insert(d.files.end(), test.files.begin(), test.files.end());
  return d;
}

DataSplit split_data(const RunConfig& c, const at::Tensor& train_y) {
  // Validation split: a seeded fraction of the training split, held out; the
  // rest keeps its stored order so that order=stored and order=label mean what they say.
  const std::int64_t total = train_y.size(0);
  std::vector<std::int64_t> perm(static_cast<std::size_t>(total));
  for (std::int64_t i = 0; i < total; ++i) perm[std::size_t(i)] = i;
  const auto n_val = std::size_t(total - training_samples(c, total));
  if (n_val > 0) Rng::stream(c.resolved_data_seed(), kValidationStream).shuffle(perm);
  DataSplit out;
  out.val.assign(perm.begin(), perm.begin() + std::ptrdiff_t(n_val));
  out.train.assign(perm.begin() + std::ptrdiff_t(n_val), perm.end());
  std::sort(out.val.begin(), out.val.end());
  std::sort(out.train.begin(), out.train.end());
  const auto n = std::int64_t(out.train.size());
  check_global_batch(c, std::int64_t(total));
  std::vector<std::int64_t> labels(out.train.size());
  const at::Tensor labels_host = train_y.to(at::kCPU);  // no copy on the CPU
  const std::int64_t* y = labels_host.data_ptr<std::int64_t>();
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = y[out.train[i]];
  out.shards = assign_shards(n, labels.data(), assignment_spec(c));
  out.stats = assignment_stats(n, out.shards, labels.data());
  for (auto& shard : out.shards) {
    for (auto& p : shard) p = out.train[std::size_t(p)];
  }
  return out;
}

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
  steps_per_epoch_ = std::int64_t(train_idx_.size()) / (std::int64_t(c.workers) * c.batch_size);

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
  const auto& shape = data_.train_x.sizes();
  for (int i = 0; i < comm_.local_workers(); ++i) {
    replicas_.push_back(build());
    replicas_.back()->copy_weights_from(*eval_);
    const int worker = first + i;
    samplers_.emplace_back(shard_of(worker), c.seed, worker);
    batch_idx_.emplace_back(std::vector<std::int64_t>{c.batch_size}, at::kLong, device);
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
  const int processes = comm_.world_workers() / std::max(1, comm_.local_workers());
  if (resolve_cuda_graphs(execution.cuda_graphs, config_, device, processes)) {
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

double Trainer::step() {
  advance();
  const std::vector<std::vector<double>> losses = read_losses();
  double loss_sum = 0;
  for (const double l : losses.back()) loss_sum += l;  // in worker order
  return loss_sum / double(config_.workers);
}

void Trainer::log_row(at::Tensor& log, std::int64_t row, const at::Tensor& now) {
  if (row == log.size(0)) {
    at::Tensor bigger = at::empty({2 * row, log.size(1)}, log.options());
    bigger.narrow(0, 0, row).copy_(log);
    log = bigger;
  }
  log.select(0, row).copy_(now);
}

std::vector<std::vector<double>> Trainer::read_losses() {
  // One transfer for each log: the float losses and distances read as double
  // exactly. Every worker's values come in worker order, the same on any layout.
  std::vector<std::vector<double>> out;
  if (unread_steps_ > 0) {
    const at::Tensor host = loss_log_.narrow(0, 0, unread_steps_).to(at::kDouble).to(at::kCPU).contiguous();
    const double* p = host.data_ptr<double>();
    const auto local = std::size_t(host.size(1));
    for (std::int64_t i = 0; i < unread_steps_; ++i, p += local) {
      out.push_back(comm_.all_workers(std::vector<double>(p, p + local)));
    }
  }
  if (unread_syncs_ > 0) {
    const at::Tensor host = distance_log_.narrow(0, 0, unread_syncs_).to(at::kDouble).to(at::kCPU).contiguous();
    const double* p = host.data_ptr<double>();
    const auto local = std::size_t(host.size(1));
    for (std::int64_t i = 0; i < unread_syncs_; ++i, p += local) {
      double distance = 0;
      for (const double d : comm_.all_workers(std::vector<double>(p, p + local))) distance += d;
      last_divergence_ = distance / double(config_.workers);
      result_.syncs.divergence.push_back(last_divergence_);
    }
  }
  unread_steps_ = unread_syncs_ = 0;
  return out;
}

Trainer::StepKind Trainer::kind_of(std::int64_t t) const {
  const RunConfig& c = config_;
  StepKind k;
  k.lr = lr_->at(t);
  k.synchronous = c.sync_period == 1 || t / steps_per_epoch_ < c.local_sgd_from_epoch;
  // Identical replicas that apply the same mean gradient stay identical: update
  // the first, whose parameters and momentum the others mirror (Replica::mirror),
  // which moves far less memory than W optimiser updates or W - 1 copies
  // (docs/performance.md). The bits are the same either way.
  k.update_once = k.synchronous && identical_ && replicas_.size() > 1;
  if (!k.synchronous) {
    if (c.sync_period != kNever && (t + 1) % c.sync_period == 0) {
      k.average = 2;
    } else if (c.group_size > 1 && c.group_sync_period != kNever && (t + 1) % c.group_sync_period == 0) {
      k.average = 1;
    }
  }
  return k;
}

void Trainer::advance() {
  const RunConfig& c = config_;
  const StepKind k = kind_of(step_);
  // The host's part, every step: each worker's batch indices and augmentation
  // draws, sent to the device without waiting (Upload).
  for (std::size_t w = 0; w < replicas_.size(); ++w) {
    samplers_[w].next(batch_idx_[w].host().data_ptr<std::int64_t>(), c.batch_size);
    batch_idx_[w].send();
    if (!augmenters_.empty()) augmenters_[w].draw(batch_x_[w]);
  }
  if (graphs_) {
    if (k.lr != graph_lr_) {  // a graph holds the rate it was captured with
      graphs_->clear();
      graph_lr_ = k.lr;
    }
    const std::string key =
        std::to_string(int(k.synchronous)) + std::to_string(int(k.update_once)) + std::to_string(k.average);
    graphs_->run(key, [&] { device_step(k, false); });
  } else {
    device_step(k, true);
  }
  // What the host keeps of the step, graphed or not.
  log_row(loss_log_, unread_steps_++, loss_now_);
  const std::int64_t p_bytes = mean_.numel() * std::int64_t(mean_.element_size());
  if (k.synchronous && c.workers > 1) comm_bytes_ += p_bytes;
  ++step_;
  averaged_world_ = false;
  identical_ = k.synchronous;
  if (k.average > 0) {
    const int count = k.average == 2 ? c.workers : c.group_size;
    comm_bytes_ += p_bytes * (c.average_momentum ? 2 : 1) +
                   (c.average_buffers ? buffers_[0].numel() * std::int64_t(buffers_[0].element_size()) : 0);
    log_row(distance_log_, unread_syncs_++, distance_now_);  // the divergence: read_losses()
    identical_ = k.average == 2;
    averaged_world_ = count == c.workers;
    result_.syncs.step.push_back(step_);
    result_.syncs.level.push_back(k.average);
  }
}

void Trainer::device_step(const StepKind& k, bool timed) {
  const RunConfig& c = config_;
  auto train_worker = [&](int i) {
    const at::AutoGradMode grad(true);  // thread-local: not inherited from the calling thread
    const auto w = std::size_t(i);
    const at::Tensor& idx = batch_idx_[w].device();
    at::index_select_out(batch_x_[w], data_.train_x, 0, idx);
    at::index_select_out(batch_y_[w], data_.train_y, 0, idx);
    const at::Tensor* input = &batch_x_[w];
    if (!augmenters_.empty()) {
      augmenters_[w].apply_drawn(batch_x_[w], batch_aug_[w]);
      input = &batch_aug_[w];
    }
    Replica& r = *replicas_[w];
    at::Tensor loss;
    {
      // bf16: the forward pass under autocast; the loss of its logits in float32
      // (to() returns the tensor itself when it is float32 already: fp32's bits are untouched).
      const PrecisionScope precision(c.precision, data_.train_x.device());
      loss = at::cross_entropy_loss(r.model().forward(in_format(*input)).to(at::kFloat), batch_y_[w]);
    }
    r.backward(loss);
    loss_now_.select(0, i).copy_(loss.detach());
  };
  claim_threads();
  if (streams_) {
    streams_->run(int(replicas_.size()), train_worker);
  } else {
    for_each_local(int(replicas_.size()), train_worker);
  }
  if (k.synchronous && c.workers > 1) {
    const auto t0 = Clock::now();
    comm_.mean(grads_, 0, c.workers, mean_);
    if (k.update_once) {
      grads_[0].copy_(mean_);
    } else {
      for (auto& g : grads_) g.copy_(mean_);
    }
    if (timed) comm_s_ += seconds_since(t0);
  }
  auto update = [&](int i) {
    Replica& r = *replicas_[std::size_t(i)];
    sgd_step(r, sgd_, k.lr);
    if (mask_.defined()) {  // pruned weights stay exactly zero, and so does their momentum
      const at::NoGradGuard no_grad;
      r.params().mul_(mask_);
      r.momentum().mul_(mask_);
    }
  };
  if (k.update_once) {
    update(0);
    for (std::size_t i = 1; i < replicas_.size(); ++i) replicas_[i]->mirror(*replicas_[0]);
  } else {
    // Each replica updates its own weights from here (post-local SGD's first
    // local step). All take them back before any update: the first one's would
    // change what the others copy.
    for_each_local(int(replicas_.size()), [&](int i) { replicas_[std::size_t(i)]->own_weights(); });
    for_each_local(int(replicas_.size()), update);
  }
  if (k.average > 0) {
    const auto t0 = Clock::now();
    average_parameters(k.average == 2 ? c.workers : c.group_size);
    if (timed) comm_s_ += seconds_since(t0);
  }
}

// Averages parameters (and, as configured, momentum and buffers) over each
// range of `count` workers: the world or every group. Each worker's distance
// from the mean goes to distance_now_.
void Trainer::average_parameters(int count) {
  const RunConfig& c = config_;
  const int first_local = comm_.first_local_worker();
  for (int g = 0; g < c.workers; g += count) {
    comm_.mean(params_, g, count, mean_);
    // Each worker's distance from the mean, in its gradient buffer (free until
    // the next step clears it), so that workers side by side need no shared scratch.
    const int begin = std::max(g, first_local), end = std::min(g + count, first_local + comm_.local_workers());
    auto distance = [&](int w) {
      const auto lw = std::size_t(w - first_local);
      at::sub_out(grads_[lw], params_[lw], mean_);
      distance_now_.select(0, std::int64_t(lw)).copy_(grads_[lw].norm());
      params_[lw].copy_(mean_);
    };
    for_each_local(std::max(0, end - begin), [&](int i) { distance(begin + i); });
    if (c.average_momentum) {
      comm_.mean(momenta_, g, count, mean_);
      for (int w = begin; w < end; ++w) {
        momenta_[std::size_t(w - first_local)].copy_(mean_);
      }
    }
    if (c.average_buffers && buffers_[0].numel() > 0) {
      at::Tensor mean_buffers = eval_->buffers();  // free between evaluations
      comm_.mean(buffers_, g, count, mean_buffers);
      for (int w = begin; w < end; ++w) {
        buffers_[std::size_t(w - first_local)].copy_(mean_buffers);
      }
    }
  }
}

// The run's shape and its shards, on the progress sink, and a resumption.
void Trainer::announce(ProgressSink* progress) const {
  const RunConfig& c = config_;
  if (progress) {
    char line[400];
    std::snprintf(line, sizeof line,
                  "# %d workers, %d shard owners, %lld training samples (%lld held out), %lld steps/epoch, "
                  "%lld parameters; shard size min %lld mean %.1f max %lld; covered %lld; mean pairwise "
                  "overlap %.1f samples (%.4f of the training set)",
                  c.workers, c.shard_owners(), (long long)train_idx_.size(), (long long)val_idx_.size(),
                  (long long)steps_per_epoch_, (long long)eval_->parameter_count(), (long long)assignment_.min_size,
                  assignment_.mean_size, (long long)assignment_.max_size, (long long)assignment_.covered,
                  assignment_.mean_intersection, assignment_.mean_overlap_fraction);
    progress->message(line);
    if (step_ > 0) progress->message("# resumed from a checkpoint at step " + std::to_string(step_));
  }
}

// The summary of a run ended at step_ (finished, diverged or stopped) after wall_time_s.
void Trainer::summarize(RunResult& r, double wall_time_s) {
  const RunConfig& c = config_;
  RunSummary& s = r.summary;
  s.steps = step_;
  s.steps_per_epoch = steps_per_epoch_;
  s.parameters = eval_->parameter_count();
  s.wall_time_s = wall_time_s;
  s.samples_per_s = double(step_ * c.workers * c.batch_size) / std::max(s.wall_time_s, 1e-9);
  s.comm_time_s = comm_s_;
  s.eval_time_s = eval_s_;
  s.compute_time_s = std::max(0.0, s.wall_time_s - comm_s_ - eval_s_);
  // The run's largest process: what a job must give each of its processes.
  const auto largest = [this](double mine) {  // NaN if unknown on any process
    for (const double p : comm_.all_workers(std::vector<double>(std::size_t(comm_.local_workers()), mine))) {
      mine = std::isnan(p) || std::isnan(mine) ? kNaN : std::max(mine, p);
    }
    return mine;
  };
  s.peak_rss_mib = largest(peak_memory_so_far());
  s.peak_gpu_mib = largest(peak_gpu_so_far());
  if (!r.eval.step.empty()) {
    s.final_test_accuracy = r.eval.test_accuracy.back();
    s.final_test_loss = r.eval.test_loss.back();
    s.final_val_accuracy = r.eval.val_accuracy.back();
    // Evaluations where the test split was not due hold NaN (test_every).
    s.best_test_accuracy = kNaN;
    for (const double a : r.eval.test_accuracy) {
      if (std::isfinite(a) && (std::isnan(s.best_test_accuracy) || a > s.best_test_accuracy)) s.best_test_accuracy = a;
    }
  } else {
    s.final_test_accuracy = s.final_test_loss = s.final_val_accuracy = s.best_test_accuracy = kNaN;
  }
  s.final_synced_test_accuracy = kNaN;
  for (std::size_t i = r.eval.step.size(); i-- > 0;) {
    if (r.eval.synced[i] != 0 && std::isfinite(r.eval.test_accuracy[i])) {
      s.final_synced_test_accuracy = r.eval.test_accuracy[i];
      break;
    }
  }
}

// Reads the losses of `rows` (the steps advanced since the last read) into
// the train series and reports each step, all but the last when `hold_last`
// (an evaluation follows, and reports it). Returns false when a loss is not
// finite: the series then end at that step, as the run does.
bool Trainer::record_unread(std::vector<UnreadStep>& rows, ProgressSink* progress, bool hold_last) {
  const RunConfig& c = config_;
  TrainSeries& tr = result_.train;
  const std::vector<std::vector<double>> losses = read_losses();
  if (losses.size() != rows.size()) {  // advance() called outside run() and not read before it
    throw Error("Trainer::run: " + std::to_string(losses.size()) + " steps' losses unread for " +
                std::to_string(rows.size()) + " steps of this run (read_losses() after advance())");
  }
  const std::int64_t total = total_steps();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const UnreadStep& u = rows[i];
    double loss = 0;
    for (const double l : losses[i]) loss += l;  // in worker order
    loss /= double(c.workers);
    tr.step.push_back(u.step);
    tr.epoch.push_back(double(u.step) / double(steps_per_epoch_));
    tr.loss.push_back(loss);
    tr.lr.push_back(u.lr);
    tr.samples.push_back(u.step * c.workers * c.batch_size);
    tr.time_s.push_back(u.time_s);
    tr.comm_s.push_back(u.comm_s);
    tr.comm_bytes.push_back(u.comm_bytes);
    tr.worker_loss.insert(tr.worker_loss.end(), losses[i].begin(), losses[i].end());
    last_event_ = ProgressEvent{};
    last_event_.step = u.step;
    last_event_.total_steps = total;
    last_event_.epoch = int((u.step - 1) / steps_per_epoch_) + 1;
    last_event_.epochs = c.epochs;
    last_event_.loss = loss;
    last_event_.lr = u.lr;
    last_event_.elapsed_s = u.time_s;
    if (!std::isfinite(loss)) {
      // Steps after it ran before the host read this one: the run ends here all the same.
      SyncSeries& y = result_.syncs;
      std::size_t keep = 0;
      while (keep < y.step.size() && y.step[keep] <= u.step) ++keep;
      y.step.resize(keep);
      y.level.resize(keep);
      y.divergence.resize(keep);
      step_ = u.step;
      result_.summary.status = RunStatus::diverged;
      if (progress) progress->message("# diverged: the training loss is not finite at step " + std::to_string(u.step));
      rows.clear();
      return false;
    }
    loss_since_eval_ += loss;
    ++steps_since_eval_;
    if (progress && !(hold_last && i + 1 == rows.size())) progress->progress(last_event_);
  }
  rows.clear();
  return true;
}

RunResult Trainer::run(ProgressSink* progress, const CheckpointPolicy& checkpoint) {
  const RunConfig& c = config_;
  RunResult& r = result_;
  r.assignment = assignment_;
  r.sparsity = sparsity_;
  announce(progress);
  // Runs beside this one share the process: its peaks since it started.
  const at::Device device = data_.train_x.device();
  peak_reset_ = shared_process_ || reset_peak_memory();
  gpu_peak_reset_ = shared_process_ ? device.is_cuda() : reset_peak_device_memory(device);
  const auto t0 = Clock::now();
  auto elapsed = [&] { return elapsed_before_ + seconds_since(t0); };
  double last_checkpoint_s = elapsed();
  const std::int64_t total = total_steps();
  std::vector<UnreadStep> unread;
  // eval_growth's next step, found anew on a resume: the steps are fixed.
  std::int64_t growth_next = c.eval_growth > 0 ? growth_evaluation_after(step_, c.eval_growth) : -1;
  while (step_ < total) {
    const double lr = lr_->at(step_);
    advance();
    kill_point("step");
    fail_point("step");
    if (out_of_memory_point("step"))
      TORCH_CHECK_WITH(OutOfMemoryError, false, "injected: out of memory (DPSTUDY_TEST_OOM_AT)");
    unread.push_back({step_, lr, elapsed(), comm_s_, comm_bytes_});
    const bool epoch_end = step_ % steps_per_epoch_ == 0, growth_due = step_ == growth_next;
    if (growth_due) growth_next = growth_evaluation_after(step_, c.eval_growth);
    const bool eval_due = epoch_end || growth_due || (c.eval_every > 0 && step_ % c.eval_every == 0) ||
                          (c.eval_at_sync && averaged_world_);
    if (eval_due || std::int64_t(unread.size()) >= read_every_ || step_ == total) {
      if (!record_unread(unread, progress, eval_due)) break;
    }
    if (eval_due) {
      const bool test_due = c.test_every == 0 || step_ % c.test_every == 0 || epoch_end || step_ == total;
      ProgressEvent& ev = last_event_;
      const bool at_goal = evaluate_into(r, loss_since_eval_ / double(steps_since_eval_), test_due, elapsed());
      loss_since_eval_ = 0;
      steps_since_eval_ = 0;
      ev.evaluation = true;
      ev.test_accuracy = r.eval.test_accuracy.back();
      if (!val_idx_.empty()) ev.val_accuracy = r.eval.val_accuracy.back();
      ev.elapsed_s = elapsed();
      if (at_goal && progress) {
        char line[120];
        std::snprintf(line, sizeof line, "# goal error %g reached at step %lld", c.goal_error, (long long)step_);
        progress->message(line);
      }
      if (progress) progress->progress(ev);
    }
    if (c.stop_at_goal && r.summary.steps_to_goal >= 0) break;
    if (checkpoint.path.empty() || step_ == total) continue;
    // Each process's clock and signals differ: the run's processes decide
    // together (one small allreduce per step under MPI), else a kill could
    // leave checkpoints of two steps, which resume nothing.
    enum : int { kDue = 1, kStop = 2 };
    int flags = 0;
    if ((checkpoint.every_steps > 0 && step_ % checkpoint.every_steps == 0) ||
        (checkpoint.interval_s > 0 && elapsed() - last_checkpoint_s >= checkpoint.interval_s)) {
      flags |= kDue;
    }
    if (stop_requested()) flags |= kStop;
    flags = comm_.agree(flags);
    if (flags != 0) {
      if (!record_unread(unread, progress, false)) break;  // a checkpoint holds the series so far
      elapsed_before_ += seconds_since(t0);
      const auto c0 = Clock::now();
      save_checkpoint(checkpoint.path);
      checkpoint_s_ += seconds_since(c0);
      elapsed_before_ -= seconds_since(t0);
      last_checkpoint_s = elapsed();
    }
    if (flags & kStop) {
      r.summary.status = RunStatus::stopped;
      if (progress) progress->message("# stopped at step " + std::to_string(step_) + ", checkpointed");
      break;
    }
  }
  summarize(r, elapsed());
  return r;
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
