// A Trainer's full state saved to and restored from a checkpoint file
// (dpstudy.checkpoint/1): replicas, optimiser state, samplers, the random
// generator and the series so far, so that a resumed run ends bit for bit as
// an uninterrupted one.
#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <utility>

#include "dpstudy/error.hpp"
#include "dpstudy/fault.hpp"
#include "dpstudy/hdf5.hpp"
#include "dpstudy/results.hpp"
#include "dpstudy/trainer.hpp"

namespace dpstudy {

namespace {

// A config text without the keys added later that hold their old default: a
// checkpoint made before such a key existed is one of the same configuration.
std::string comparable(const std::string& config_text) {
  std::string out, line;
  std::istringstream in(config_text);
  while (std::getline(in, line)) {
    const std::size_t eq = line.find('=');
    if (eq != std::string::npos && added_later_at_old_default(line.substr(0, eq), line.substr(eq + 1))) continue;
    out += line + "\n";
  }
  return out;
}

}  // namespace

std::string Trainer::config_text() const {
  std::string text;
  for (const auto& [k, v] : config_.key_values()) text += k + "=" + to_text(v) + "\n";
  return text;
}

namespace {

std::vector<std::int64_t> as_ints(const at::Tensor& bytes) {
  const at::Tensor b = bytes.contiguous();
  const auto* p = b.data_ptr<std::uint8_t>();
  return std::vector<std::int64_t>(p, p + b.numel());
}

void write_tensor(h5::Group& g, const std::string& name, const at::Tensor& t) {
  const at::Tensor cpu = t.to(at::kCPU).contiguous();
  g.write_floats(name, cpu.data_ptr<float>(), cpu.numel());
}

void read_tensor(const std::string& path, const h5::Group& g, const std::string& name, at::Tensor& t) {
  const std::vector<float> v = g.read_floats(name);
  if (std::int64_t(v.size()) != t.numel()) {
    throw DataError(path, name + " holds " + std::to_string(v.size()) + " values, the model " +
                              std::to_string(t.numel()));
  }
  t.copy_(at::from_blob(const_cast<float*>(v.data()), {t.numel()}, at::kFloat));
}

// The series and counters a checkpoint holds, checked against its step: a
// damaged or edited checkpoint would otherwise resume into a run file whose
// series disagree (rerun as corrupt) or a train_loss averaged over a wrong count.
void check_restored(const std::string& path, const RunResult& r, std::int64_t step, std::int64_t workers,
                    std::int64_t steps_since_eval) {
  auto need = [&](bool ok, const std::string& what) {
    if (!ok) throw DataError(path, what + " (a damaged or edited checkpoint)");
  };
  auto rows = [&](const char* name, std::size_t n, std::size_t expected, const char* of) {
    need(n == expected, std::string(name) + " has " + std::to_string(n) + " values, expected " +
                            std::to_string(expected) + " (" + of + ")");
  };
  const TrainSeries& t = r.train;
  const std::size_t steps = std::size_t(step);
  rows("train/step", t.step.size(), steps, "one per step");
  for (std::size_t i = 0; i < steps; ++i) {
    need(t.step[i] == std::int64_t(i) + 1, "train/step holds " + std::to_string(t.step[i]) + " in row " +
                                               std::to_string(i) + ", expected " + std::to_string(i + 1));
  }
  using Rows = std::pair<const char*, std::size_t>;
  for (const auto& [name, n] : {Rows{"train/epoch", t.epoch.size()}, Rows{"train/loss", t.loss.size()},
                                Rows{"train/lr", t.lr.size()}, Rows{"train/samples", t.samples.size()},
                                Rows{"train/time_s", t.time_s.size()}, Rows{"train/comm_s", t.comm_s.size()},
                                Rows{"train/comm_bytes", t.comm_bytes.size()}}) {
    rows(name, n, steps, "one per step");
  }
  rows("train/worker_loss", t.worker_loss.size(), steps * std::size_t(workers), "one per step and worker");
  const EvalSeries& e = r.eval;
  const std::size_t evals = e.step.size();
  for (const auto& [name, n] :
       {Rows{"eval/epoch", e.epoch.size()}, Rows{"eval/test_loss", e.test_loss.size()},
        Rows{"eval/test_accuracy", e.test_accuracy.size()}, Rows{"eval/val_loss", e.val_loss.size()},
        Rows{"eval/val_accuracy", e.val_accuracy.size()}, Rows{"eval/train_loss", e.train_loss.size()},
        Rows{"eval/worker_divergence", e.worker_divergence.size()}}) {
    rows(name, n, evals, "one per eval/step");
  }
  if (!e.synced.empty()) rows("eval/synced", e.synced.size(), evals, "one per eval/step");
  for (std::size_t i = 0; i < evals; ++i) {
    need(e.step[i] >= 1 && e.step[i] <= step && (i == 0 || e.step[i] > e.step[i - 1]),
         "eval/step holds " + std::to_string(e.step[i]) + " in row " + std::to_string(i) +
             ", expected rising steps within 1.." + std::to_string(step));
  }
  const SyncSeries& y = r.syncs;
  rows("syncs/level", y.level.size(), y.step.size(), "one per syncs/step");
  rows("syncs/divergence", y.divergence.size(), y.step.size(), "one per syncs/step");
  const std::int64_t last_eval = evals == 0 ? 0 : e.step.back();
  need(steps_since_eval == step - last_eval,
       "steps_since_eval is " + std::to_string(steps_since_eval) + ", expected " + std::to_string(step - last_eval) +
           " (step " + std::to_string(step) + ", last evaluation at step " + std::to_string(last_eval) + ")");
}

}  // namespace

void Trainer::save_checkpoint(const std::string& path) {
  if (unread_steps_ > 0 || unread_syncs_ > 0) {
    throw Error("Trainer::save_checkpoint: " + std::to_string(unread_steps_) +
                " steps not read yet (read_losses() first), which the checkpoint's series would miss");
  }
  result_.assignment = assignment_;
  write_hdf5_atomically(
      path,
      [&](h5::Group& root) {
        root.set("schema", kCheckpointSchema);
        root.set("config", config_text());
        root.set("dataset_checksums", data_.checksums());
        root.set("step", step_);
        root.set("identical", std::int64_t(identical_));
        root.set("comm_bytes", comm_bytes_);
        root.set("comm_s", comm_s_);
        root.set("eval_s", eval_s_);
        root.set("steps_to_goal", result_.summary.steps_to_goal);
        root.set("time_to_goal_s", result_.summary.time_to_goal_s);
        root.set("last_divergence", last_divergence_);
        root.set("elapsed_s", elapsed_before_);
        root.set("peak_rss_mib", peak_memory_so_far());
        root.set("peak_gpu_mib", peak_gpu_so_far());
        root.set("loss_since_eval", loss_since_eval_);
        root.set("steps_since_eval", steps_since_eval_);
        root.write("generator", as_ints(at::detail::getDefaultCPUGenerator().get_state()));
        h5::Group workers = root.create_group("workers");
        for (std::size_t w = 0; w < replicas_.size(); ++w) {
          h5::Group g = workers.create_group(std::to_string(comm_.first_local_worker() + int(w)));
          write_tensor(g, "params", replicas_[w]->params());
          write_tensor(g, "momentum", replicas_[w]->momentum());
          write_tensor(g, "buffers", replicas_[w]->buffers());
          const ShardSampler::State st = samplers_[w].state();
          g.write("sampler_order", st.order);
          g.set("sampler_position", st.position);
          g.set("sampler_passes", st.passes);
          g.set("sampler_rng", std::int64_t(st.rng));
          if (!augmenters_.empty()) g.set("augmenter_rng", std::int64_t(augmenters_[w].rng_state()));
        }
        write_series(root, result_, config_.workers);
      },
      "checkpoint-write");
}

void Trainer::restore_checkpoint(const std::string& path) {
  if (graphs_) graphs_->clear();  // they hold the tensors as they were: captured again
  try {
    restore_checkpoint_unchecked(path);
  } catch (const c10::Error& e) {
    // A state LibTorch refuses (the generator's): the file's fault, so a
    // reason to start over, like every other unusable checkpoint.
    throw DataError(path, std::string("LibTorch refuses its state: ") + e.what_without_backtrace());
  }
}

void Trainer::check_checkpoint_header(const std::string& path, const h5::Group& root) const {
  if (!root.has_attr("schema") || root.get_string("schema") != kCheckpointSchema) {
    throw DataError(path, std::string("not a ") + kCheckpointSchema + " file");
  }
  if (comparable(root.get_string("config")) != comparable(config_text())) {
    throw DataError(path, "is a checkpoint of another configuration");
  }
  // Older checkpoints did not record the data. One made on other files would
  // finish the run on data it did not start on.
  if (root.has_attr("dataset_checksums")) {
    const std::string differ = checksum_differences(root.get_string("dataset_checksums"), data_.checksums());
    if (!differ.empty()) throw DataError(path, "was made on other data files: " + differ);
  }
}

void Trainer::restore_checkpoint_unchecked(const std::string& path) {
  fail_point("checkpoint-read");
  const h5::File file = h5::File::open_read(path);
  const h5::Group root = file.root();
  check_checkpoint_header(path, root);
  const h5::Group workers = root.open_group("workers");
  for (auto& r : replicas_) r->own_weights();  // each reads its own weights, which need not be equal
  for (std::size_t w = 0; w < replicas_.size(); ++w) {
    const h5::Group g = workers.open_group(std::to_string(comm_.first_local_worker() + int(w)));
    read_tensor(path, g, "params", replicas_[w]->params());
    read_tensor(path, g, "momentum", replicas_[w]->momentum());
    read_tensor(path, g, "buffers", replicas_[w]->buffers());
    ShardSampler::State st;
    st.order = g.read_ints("sampler_order");
    st.position = g.get_int("sampler_position");
    st.passes = g.get_int("sampler_passes");
    st.rng = std::uint64_t(g.get_int("sampler_rng"));
    try {
      samplers_[w].restore(st);
    } catch (const Error& e) {
      throw DataError(path, "worker " + std::to_string(comm_.first_local_worker() + int(w)) + ": " + e.what());
    }
    if (!augmenters_.empty()) augmenters_[w].restore(std::uint64_t(g.get_int("augmenter_rng")));
  }
  const std::vector<std::int64_t> gen = root.read_ints("generator");
  at::Tensor state = at::empty({std::int64_t(gen.size())}, at::kByte);
  for (std::size_t i = 0; i < gen.size(); ++i) state.data_ptr<std::uint8_t>()[i] = std::uint8_t(gen[i]);
  at::Generator generator = at::detail::getDefaultCPUGenerator();  // shares the global generator
  {
    // Not between another run's seeding and its model's draws (runs at once).
    const std::lock_guard<std::mutex> turn(generator_lock());
    const std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(state);
  }
  step_ = root.get_int("step");
  if (step_ < 0 || step_ > total_steps()) {
    throw DataError(path, "its step " + std::to_string(step_) + " is not one of this run's 0.." +
                              std::to_string(total_steps()));
  }
  identical_ = root.get_int("identical") != 0;
  comm_bytes_ = root.get_int("comm_bytes");
  comm_s_ = root.get_double("comm_s");
  eval_s_ = root.get_double("eval_s");
  last_divergence_ = root.get_double("last_divergence");
  elapsed_before_ = root.get_double("elapsed_s");
  loss_since_eval_ = root.get_double("loss_since_eval");
  steps_since_eval_ = root.get_int("steps_since_eval");
  result_ = read_series(root);
  check_restored(path, result_, step_, config_.workers, steps_since_eval_);
  for (const auto& [key, v] : {std::pair<const char*, double>{"comm_s", comm_s_}, {"eval_s", eval_s_},
                                {"elapsed_s", elapsed_before_}}) {
    if (!(v >= 0 && std::isfinite(v))) {
      throw DataError(path, std::string(key) + " is " + std::to_string(v) +
                                ", expected a finite time >= 0 (a damaged or edited checkpoint)");
    }
  }
  if (comm_bytes_ < 0) throw DataError(path, "comm_bytes is negative (a damaged or edited checkpoint)");
  if (result_.eval.synced.size() != result_.eval.step.size()) {
    // A checkpoint of a dpstudy before eval/synced: what each evaluation was,
    // from the config and the averagings recorded.
    const RunConfig& c = config_;
    std::set<std::int64_t> world;
    for (std::size_t i = 0; i < result_.syncs.step.size(); ++i) {
      if (result_.syncs.level[i] == 2 || c.group_size == c.workers) world.insert(result_.syncs.step[i]);
    }
    result_.eval.synced.clear();
    for (const std::int64_t s : result_.eval.step) {
      const bool synchronous = c.sync_period == 1 || (s - 1) / steps_per_epoch_ < c.local_sgd_from_epoch;
      result_.eval.synced.push_back(synchronous || world.count(s) > 0);
    }
  }
  result_.summary.steps_to_goal = root.get_int("steps_to_goal");
  result_.summary.time_to_goal_s = root.get_double("time_to_goal_s");
  // The goal is reached at an evaluation, once; a run diverges before a NaN loss is summed.
  const std::vector<std::int64_t>& evaluated = result_.eval.step;
  const std::int64_t at_goal = result_.summary.steps_to_goal;
  if (at_goal != -1 && std::find(evaluated.begin(), evaluated.end(), at_goal) == evaluated.end()) {
    throw DataError(path, "steps_to_goal is " + std::to_string(at_goal) +
                              ", expected -1 or a step it evaluated (a damaged or edited checkpoint)");
  }
  if (!(result_.summary.time_to_goal_s >= 0 && std::isfinite(result_.summary.time_to_goal_s))) {
    throw DataError(path, "time_to_goal_s is " + std::to_string(result_.summary.time_to_goal_s) +
                              ", expected a finite time >= 0 (a damaged or edited checkpoint)");
  }
  if (!std::isfinite(loss_since_eval_)) {
    throw DataError(path, "loss_since_eval is not finite (a damaged or edited checkpoint)");
  }
  // Unknown in checkpoints of a dpstudy before them, and where they could not be measured: 0.
  const auto peak = [&](const char* name) {
    const double v = root.has_attr(name) ? root.get_double(name) : 0;
    return std::isnan(v) ? 0 : v;
  };
  peak_before_mib_ = peak("peak_rss_mib");
  gpu_peak_before_mib_ = peak("peak_gpu_mib");
}

RunResult train_run(const RunConfig& config, const ModelFactory& factory, const TrainingData& data,
                    Communicator& comm, ProgressSink* progress, Execution execution) {
  Trainer trainer(config, factory, data, comm, execution);
  return trainer.run(progress);
}

}  // namespace dpstudy
