#include "dpstudy/learning_rate.hpp"

#include <algorithm>
#include <cmath>

namespace dpstudy {

LearningRate::LearningRate(const RunConfig& c, std::int64_t steps_per_epoch)
    : config_(c),
      steps_per_epoch_(steps_per_epoch),
      total_(std::int64_t(c.epochs) * steps_per_epoch),
      warmup_(std::llround(c.warmup_epochs * double(steps_per_epoch))),
      peak_(c.peak_lr()) {
  const double base = c.lr > 0 ? c.lr : double(c.batch_size) / c.batch_lr_ratio;
  start_ = c.warmup_start == WarmupStart::base ? base : 0.0;
}

double LearningRate::at(std::int64_t step) const {
  if (step < warmup_) return start_ + (peak_ - start_) * double(step + 1) / double(warmup_);
  const double t = double(step - warmup_);
  const double span = double(std::max<std::int64_t>(total_ - warmup_, 1));
  const double end = config_.lr_end_factor * peak_;
  switch (config_.schedule) {
    case LrSchedule::constant:
      return peak_;
    case LrSchedule::step: {
      double rate = peak_;
      for (double m : config_.lr_milestones) {
        if (step >= std::llround(m * double(steps_per_epoch_))) rate *= config_.lr_decay;
      }
      return rate;
    }
    case LrSchedule::cosine:
      return end + (peak_ - end) * 0.5 * (1.0 + std::cos(M_PI * t / span));
    case LrSchedule::linear: {
      const double d = config_.lr_decay_steps > 0 ? double(config_.lr_decay_steps) : span;
      return end + (peak_ - end) * std::max(0.0, 1.0 - t / d);
    }
  }
  return peak_;
}

}  // namespace dpstudy
