// One step of a Trainer: each local worker's forward and backward pass, the
// averaging the step's kind asks for, and the optimizer updates; eager or
// replayed from a CUDA graph.
#include <ATen/ATen.h>

#include <algorithm>

#include "dpstudy/precision.hpp"
#include "dpstudy/trainer.hpp"
#include "stopwatch.hpp"

namespace dpstudy {

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
  // draws, sent to the device without waiting (Upload); all local workers'
  // in one copy, a launch per step rather than one or two per worker.
  const at::Tensor& in = step_in_->host();
  std::int64_t* p = in.data_ptr<std::int64_t>();
  for (std::size_t w = 0; w < replicas_.size(); ++w, p += in.stride(0)) {
    samplers_[w].next(p, c.batch_size);
    if (!augmenters_.empty()) augmenters_[w].draw(batch_x_[w], p + c.batch_size);
  }
  step_in_->send();
  // On a GPU the updates read the rate on the device, which a graph's replay
  // reads too: one capture serves every rate of the schedule.
  if (rate_.defined() && k.lr != rate_held_) {
    rate_.fill_(k.lr);
    rate_held_ = k.lr;
  }
  StepParts parts;
  step_parts(k, parts);
  if (graphs_) {
    const std::string key =
        std::to_string(int(k.synchronous)) + std::to_string(int(k.update_once)) + std::to_string(k.average);
    graphs_->run(key, parts);
  } else {
    parts.run_eagerly();
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

std::function<void()> Trainer::timed(std::function<void()> work) {
  return [this, work] {
    const auto t0 = Clock::now();
    work();
    comm_s_ += seconds_since(t0);
  };
}

void Trainer::average(StepParts& parts, std::function<void()> mean, std::function<void()> after) {
  // Timed where it runs eagerly: a capture and a replay take no time of their own.
  if (mean_on_host_) {
    parts.on_host(timed(std::move(mean)));  // MPI, between the parts' graphs
  } else {
    parts.on_device(graphs_ ? std::move(mean) : timed(std::move(mean)));
  }
  if (after) parts.on_device(graphs_ ? std::move(after) : timed(std::move(after)));
}

void Trainer::step_parts(const StepKind& k, StepParts& parts) {
  const RunConfig& c = config_;
  parts.on_device([this] {
    auto train_worker = [this](int i) {
      const at::AutoGradMode grad(true);  // thread-local: not inherited from the calling thread
      const auto w = std::size_t(i);
      const at::Tensor in = step_in_->device().select(0, i);  // [1 or 4, b]: indices, then draws
      const at::Tensor idx = in.select(0, 0);
      at::index_select_out(batch_x_[w], data_.train_x, 0, idx);
      at::index_select_out(batch_y_[w], data_.train_y, 0, idx);
      const at::Tensor* input = &batch_x_[w];
      if (!augmenters_.empty()) {
        augmenters_[w].apply_drawn(batch_x_[w], in.narrow(0, 1, 3), batch_aug_[w]);
        input = &batch_aug_[w];
      }
      Replica& r = *replicas_[w];
      at::Tensor loss;
      {
        // bf16: the forward pass under autocast; the loss of its logits in float32
        // (to() returns the tensor itself when it is float32 already: fp32's bits are untouched).
        const PrecisionScope precision(config_.precision, data_.train_x.device());
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
  });
  if (k.synchronous && c.workers > 1) {
    average(
        parts, [this] { comm_.mean(grads_, 0, config_.workers, mean_); },
        [this, k] {
          if (k.update_once) {
            grads_[0].copy_(mean_);
          } else {
            for (auto& g : grads_) g.copy_(mean_);
          }
        });
  }
  parts.on_device([this, k] {
    auto update = [&](int i) {
      Replica& r = *replicas_[std::size_t(i)];
      sgd_step(r, sgd_, k.lr, rate_);
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
  });
  if (k.average > 0) average_parameters(k.average == 2 ? c.workers : c.group_size, parts);
}

// Averages parameters (and, as configured, momentum and buffers) over each
// range of `count` workers: the world or every group. Each worker's distance
// from the mean goes to distance_now_.
void Trainer::average_parameters(int count, StepParts& parts) {
  const RunConfig& c = config_;
  const int first_local = comm_.first_local_worker();
  using Work = std::function<void()>;
  for (int g = 0; g < c.workers; g += count) {
    // This process's workers of the group. Every process calls each mean
    // (MPI); a group of other processes' workers has no device work here, so
    // nothing to capture after it.
    const int begin = std::max(g, first_local), end = std::min(g + count, first_local + comm_.local_workers());
    const bool here = begin < end;
    // Each worker's distance from the mean, in its gradient buffer (free until
    // the next step clears it), so that workers side by side need no shared scratch.
    const Work distances = [this, begin, end, first_local] {
      auto distance = [&](int w) {
        const auto lw = std::size_t(w - first_local);
        at::sub_out(grads_[lw], params_[lw], mean_);
        distance_now_.select(0, std::int64_t(lw)).copy_(grads_[lw].norm());
        params_[lw].copy_(mean_);
      };
      for_each_local(end - begin, [&](int i) { distance(begin + i); });
    };
    const Work of_params = [this, g, count] { comm_.mean(params_, g, count, mean_); };
    average(parts, of_params, here ? distances : Work());
    if (c.average_momentum) {
      const Work copies = [this, begin, end, first_local] {
        for (int w = begin; w < end; ++w) momenta_[std::size_t(w - first_local)].copy_(mean_);
      };
      const Work of_momenta = [this, g, count] { comm_.mean(momenta_, g, count, mean_); };
      average(parts, of_momenta, here ? copies : Work());
    }
    if (c.average_buffers && buffers_[0].numel() > 0) {
      at::Tensor mean_buffers = eval_->buffers();  // free between evaluations
      const Work copies = [this, begin, end, first_local, mean_buffers] {
        for (int w = begin; w < end; ++w) buffers_[std::size_t(w - first_local)].copy_(mean_buffers);
      };
      const Work of_buffers = [this, g, count, mean_buffers]() mutable {
        comm_.mean(buffers_, g, count, mean_buffers);
      };
      average(parts, of_buffers, here ? copies : Work());
    }
  }
}

}  // namespace dpstudy
