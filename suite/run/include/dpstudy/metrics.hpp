// What a run records: series as columns (one vector per column, equal
// lengths), a summary, and the assignment it trained on. Units: docs/engine.md.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "dpstudy/assignment.hpp"

namespace dpstudy {

// One row per training step.
struct TrainSeries {
  std::vector<std::int64_t> step;      // 1-based: the row is written after the update of this step
  std::vector<double> epoch;           // step / steps_per_epoch
  std::vector<double> loss;            // mean over workers of their minibatch loss (nats)
  std::vector<double> lr;              // rate used for this update
  std::vector<std::int64_t> samples;   // training samples processed so far, all workers
  std::vector<double> time_s;          // wall time since training began
  std::vector<double> comm_s;          // wall time spent averaging so far
  std::vector<std::int64_t> comm_bytes;  // bytes averaged per worker so far
  std::vector<double> worker_loss;     // [step][worker], row-major: each worker's minibatch loss
};

// One row per evaluation (every eval_every steps and at the end of each epoch).
struct EvalSeries {
  std::vector<std::int64_t> step;
  std::vector<double> epoch;
  std::vector<double> test_loss, test_accuracy;
  std::vector<double> val_loss, val_accuracy;  // NaN without a validation split
  std::vector<double> train_loss;              // mean of the step losses since the last evaluation
  std::vector<double> worker_divergence;       // at the most recent averaging (0 when synchronous)
  // 1 where every worker held the evaluated parameters (a synchronous step, or
  // an averaging over all workers at this step); 0 between averagings of local SGD.
  std::vector<std::int64_t> synced;
};

// One row per parameter averaging (not gradient averaging).
struct SyncSeries {
  std::vector<std::int64_t> step;
  std::vector<std::int32_t> level;  // 1 = within groups, 2 = all workers
  std::vector<double> divergence;   // mean over workers of ||x_w - mean||_2, just before averaging
};

// The first step of `steps` whose value reaches `target` (<= it when lower is
// better, >= otherwise); -1 if none does. NaN values never reach.
std::int64_t first_reaching(const std::vector<std::int64_t>& steps, const std::vector<double>& values, double target,
                            bool lower_is_better);

// stopped: a stop was asked for (dpstudy/stop.hpp) and the run saved a
// checkpoint; it is not finished, and no run file holds it. beaten: a search
// trial ended at an evaluation where another trial of its combination had
// reached the goal in as many steps or fewer (search_stop = beaten); its
// series are the first steps of the whole run's.
enum class RunStatus { completed, diverged, stopped, beaten };
std::string to_string(RunStatus s);

struct RunSummary {
  RunStatus status = RunStatus::completed;
  double final_test_accuracy = 0, best_test_accuracy = 0, final_test_loss = 0;
  double final_val_accuracy = 0;
  // The test accuracy at the last evaluation where every worker held the
  // evaluated parameters (eval/synced; NaN if none): under local SGD, not
  // dependent on where in an averaging period the run ended (eval_at_sync).
  double final_synced_test_accuracy = 0;
  std::int64_t steps = 0, steps_per_epoch = 0;
  double wall_time_s = 0, samples_per_s = 0;
  // wall_time_s = compute_time_s + comm_time_s + eval_time_s (s).
  double compute_time_s = 0, comm_time_s = 0, eval_time_s = 0;
  // Steps-to-result (with goal_error > 0): the first evaluated step whose error
  // (1 - accuracy, validation if held out, else test) is at most the goal; -1 never.
  std::int64_t steps_to_goal = -1;
  double time_to_goal_s = 0;
  std::int64_t parameters = 0;
  // The largest resident host memory of the run's processes while it trained
  // (runtime_info.hpp; a resumed run: of every part), MiB; NaN where unknown.
  // A measurement like the times: it differs between runs of one config.
  double peak_rss_mib = 0;
  // The most GPU memory LibTorch's allocator reserved in the run's largest
  // process (device_memory.hpp), MiB; NaN on the CPU. Also a measurement.
  double peak_gpu_mib = std::numeric_limits<double>::quiet_NaN();
};

// Removed fraction of the prunable weights (0 for a dense run), overall and per parameter.
struct SparsityReport {
  double overall = 0;
  std::vector<std::pair<std::string, double>> per_parameter;
};

struct RunResult {
  TrainSeries train;
  EvalSeries eval;
  SyncSeries syncs;
  RunSummary summary;
  AssignmentStats assignment;
  SparsityReport sparsity;
};

}  // namespace dpstudy
