// The data-parallel training engine: W logical workers, each with its own
// replica, optimiser state and sampler; a Communicator averages gradients
// (synchronous steps) or parameters (local SGD). Definitions: docs/engine.md.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dpstudy/augment.hpp"
#include "dpstudy/communicator.hpp"
#include "dpstudy/cuda_graphs.hpp"
#include "dpstudy/cuda_streams.hpp"
#include "dpstudy/dataset.hpp"
#include "dpstudy/learning_rate.hpp"
#include "dpstudy/metrics.hpp"
#include "dpstudy/progress_sink.hpp"
#include "dpstudy/replica.hpp"
#include "dpstudy/run_config.hpp"
#include "dpstudy/sampler.hpp"
#include "dpstudy/training_data.hpp"
#include "dpstudy/upload.hpp"

namespace dpstudy {

namespace h5 {
class Group;  // hdf5.hpp
}

// How a process spreads its threads (docs/engine.md#threads).
//   workers:    its workers step side by side, one thread each; every tensor
//               operation of a worker runs on that one thread, so the bits do
//               not depend on the thread count;
//   operations: one worker at a time, each operation on all the threads (the
//               matrix products sum in an order that depends on the count);
//   automatic:  workers when the process has at least as many workers as
//               threads, operations otherwise.
// On a GPU (the host's threads launch, the device computes):
//   workers:    each worker's forward and backward on a CUDA stream of its
//               own (ReplicaStreams), so the GPU may run them side by side;
//   operations: every worker on the one current stream, one after another;
//   automatic:  workers when the process has more than one worker.
// The bits are the same either way on a GPU.
enum class Parallelism { automatic, workers, operations };
Parallelism parse_parallelism(const std::string& text);  // auto | workers | operations; ConfigError otherwise
std::string to_string(Parallelism p);
// What `p` means for a process with `local_workers` workers and `threads`
// intra-op threads on `device`: workers or operations.
Parallelism resolve_parallelism(Parallelism p, int local_workers, int threads, const at::Device& device);

// How a Trainer uses the process: its threads (0: LibTorch's count when the
// Trainer is made) and how it spreads them. With the workers side by side the
// Trainer sets LibTorch's own count to 1 while it steps or evaluates (oneDNN
// sizes its convolutions by it) and back to `threads` for a Trainer that does not.
// The host reads a step's losses at read points only: evaluations,
// checkpoints, the end, and every `read_every` steps (0: every step on the
// CPU, every 64 on a GPU), so that a GPU step need not wait for the device.
// Steps captured as CUDA graphs as `cuda_graphs` says (cuda_graphs.hpp).
struct Execution {
  Parallelism parallel = Parallelism::automatic;
  int threads = 0;
  int read_every = 0;
  CudaGraphs cuda_graphs = CudaGraphs::off;
  // Other runs train in this process at the same time (--runs_at_once): a run
  // does not reset the process's peaks of memory, so its peak_rss_mib and
  // peak_gpu_mib are the process's, all its runs together.
  bool shared_process = false;
  // The updates read the learning rate from a one-element tensor on the
  // device, refilled when the rate changes, so that a CUDA graph replays any
  // schedule. Always so on a GPU; on the CPU only when this is set (tests of
  // the GPU's way). Elsewhere the rate is a number: a fused update whose bits
  // may differ in the last place.
  bool rate_on_device = false;
};

// When a run saves its full state, so that a killed run resumes where it was.
struct CheckpointPolicy {
  std::string path;            // empty: never
  double interval_s = 0;       // every this many seconds of training (0: not by time)
  std::int64_t every_steps = 0;  // every this many steps (0: not by steps)
};

class Trainer {
 public:
  // Validates the config against the data (W * b <= N, ...) and builds the
  // replicas (all with the weights of one model built under seed), shards and samplers.
  Trainer(RunConfig config, const ModelFactory& factory, const TrainingData& data, Communicator& comm,
          Execution execution = {});
  ~Trainer();

  // Trains to the end or until the loss is not finite; reports to `progress`;
  // checkpoints as `checkpoint` says. Continues from the current step. With a
  // checkpoint path, a stop asked for (stop.hpp) on any of the run's processes
  // saves a checkpoint and returns at once, status stopped. The run's
  // processes agree on every checkpoint's step (Communicator::agree), so that
  // their checkpoints always form one set.
  // `beaten`, if given, is asked at each evaluation before the run reaches its
  // goal whether another run has reached it by this step; when it says so on
  // any of the run's processes, the run ends there, status beaten. Its series
  // are then the first steps of the whole run's: the question is asked after
  // the evaluation is recorded, and changes nothing the run computes.
  RunResult run(ProgressSink* progress = nullptr, const CheckpointPolicy& checkpoint = {},
                const std::function<bool(std::int64_t)>& beaten = {});

  // Saves / restores the full state: replicas, optimiser state, samplers, the
  // random generator, the series so far. A restored run ends bit for bit as an
  // uninterrupted one (time columns aside). restore() throws DataError if the
  // file is not a checkpoint of this very configuration or holds a state that
  // configuration cannot have (a sampler order not of the worker's shard).
  void save_checkpoint(const std::string& path);
  void restore_checkpoint(const std::string& path);
  std::int64_t current_step() const { return step_; }

  // For tests and tools: the state between steps.
  std::int64_t steps_per_epoch() const { return steps_per_epoch_; }
  std::int64_t total_steps() const { return config_.run_steps(steps_per_epoch_); }
  Replica& replica(int local_worker) { return *replicas_[std::size_t(local_worker)]; }
  // The fixed pruning mask (undefined for a dense run).
  const at::Tensor& mask() const { return mask_; }
  // Dataset indices of the shard worker w draws from.
  const std::vector<std::int64_t>& shard_of(int worker) const;
  const std::vector<std::int64_t>& validation_indices() const { return val_idx_; }
  // Runs one step; returns the mean minibatch loss over the workers (which waits for the device).
  double step();
  // Runs one step and leaves its losses on the device, unread.
  void advance();
  // The losses of the steps advanced and not read yet, [step][worker] over
  // all the run's workers; also reads the divergences of their averagings
  // into the syncs series. Waits for the device.
  std::vector<std::vector<double>> read_losses();
  // Wall time spent averaging, and bytes averaged per worker, since the run began.
  double comm_seconds() const { return comm_s_; }
  // Time spent writing checkpoints in run() (outside wall_time_s).
  double checkpoint_seconds() const { return checkpoint_s_; }
  std::int64_t comm_bytes() const { return comm_bytes_; }
  // workers or operations, as resolved for this process, and its threads (provenance).
  Parallelism parallelism() const { return side_by_side_ || streams_ ? Parallelism::workers : Parallelism::operations; }
  int threads() const { return threads_; }
  // Whether its steps run as CUDA graphs, and how many graphs it captured.
  bool cuda_graphs() const { return graphs_ != nullptr; }
  int graph_captures() const { return graphs_ ? graphs_->captures() : 0; }

 private:
  void announce(ProgressSink* progress) const;
  // The device logs the host reads at read points, and the CUDA graphs as `execution` asks.
  void prepare_launches(const Execution& execution);
  // A step advanced and not read yet: what run() records of it besides its losses.
  struct UnreadStep {
    std::int64_t step;
    double lr, time_s, comm_s;
    std::int64_t comm_bytes;
  };
  bool record_unread(std::vector<UnreadStep>& rows, ProgressSink* progress, bool hold_last);
  ProgressEvent last_event_{};  // of the last step recorded
  void summarize(RunResult& r, double wall_time_s);
  struct Evaluation {
    double loss, accuracy;
  };
  // What a step does, decided on the host before it: a CUDA graph holds one kind.
  struct StepKind {
    double lr = 0;
    bool synchronous = true, update_once = false;
    int average = 0;  // after the update: 0 none, 1 every group, 2 all workers
  };
  StepKind kind_of(std::int64_t step) const;
  // A batch in the run's memory format (itself when contiguous, or already channels_last).
  at::Tensor in_format(const at::Tensor& x) const {
    return config_.memory_format == MemoryFormat::channels_last ? x.contiguous(at::MemoryFormat::ChannelsLast) : x;
  }
  // A step's work in parts (StepParts): the forward and backward passes, the
  // averaging the kind asks for, and the updates. What CUDA graphs capture:
  // one part in a run of one process; a run spread over processes cuts a
  // part at each averaging, which MPI does on the host.
  void step_parts(const StepKind& kind, StepParts& parts);
  // An averaging: `mean`, the host's part of the step when mean_on_host_ (else
  // device work), then `after` (when given), device work that uses the mean.
  // Each adds its wall time to comm_seconds() where it runs eagerly.
  void average(StepParts& parts, std::function<void()> mean, std::function<void()> after);
  std::function<void()> timed(std::function<void()> work);  // `work`, adding its time to comm_s_
  void average_parameters(int count, StepParts& parts);
  Evaluation evaluate(const at::Tensor& x, const at::Tensor& y, const at::Tensor* index);
  // Evaluates the averaged model; the test split when `test_due`, when there is
  // no validation split, or when this evaluation first reaches the goal. Records
  // steps_to_goal; returns true when it did so now.
  bool evaluate_into(RunResult& r, double train_loss, bool test_due, double elapsed_s);
  std::string config_text() const;
  void restore_checkpoint_unchecked(const std::string& path);  // restore_checkpoint, LibTorch's errors unwrapped
  // DataError unless `root` is a checkpoint of this configuration on these data files.
  void check_checkpoint_header(const std::string& path, const h5::Group& root) const;
  // This process's peak resident memory over the run so far, parts before a resume included (MiB; NaN unknown).
  double peak_memory_so_far() const;

  RunConfig config_;
  const TrainingData& data_;
  Communicator& comm_;
  SgdSettings sgd_;
  std::int64_t steps_per_epoch_ = 0, step_ = 0;
  std::unique_ptr<LearningRate> lr_;
  std::vector<std::unique_ptr<Replica>> replicas_;  // local workers
  std::unique_ptr<Replica> eval_;                   // the averaged model, for evaluation
  std::vector<std::vector<std::int64_t>> shards_;   // per owner, dataset indices
  std::vector<ShardSampler> samplers_;              // per local worker
  std::vector<Augmenter> augmenters_;               // per local worker, when augmenting
  // [local W, 1 or 4, b]: each local worker's batch indices, then its
  // augmentation draws when augmenting (Augmenter::draw); one copy a step.
  std::unique_ptr<Upload> step_in_;
  std::vector<at::Tensor> batch_x_, batch_y_, batch_aug_;
  // What the host reads at read points only (Execution::read_every): each
  // local worker's loss of the last step, and its distance from the mean at
  // the last averaging ([local W] float), and their rows not read yet.
  at::Tensor loss_now_, loss_log_, distance_now_, distance_log_;
  std::int64_t unread_steps_ = 0, unread_syncs_ = 0;
  int read_every_ = 1;
  // Appends `now` as row `row` of `log`, which doubles when full.
  static void log_row(at::Tensor& log, std::int64_t row, const at::Tensor& now);
  std::vector<at::Tensor> grads_, params_, momenta_, buffers_;  // views of the replicas' flat buffers
  at::Tensor mean_;
  at::Tensor mask_;  // 0 for pruned weights, in the flat parameter layout; undefined when dense
  SparsityReport sparsity_;
  std::vector<std::int64_t> train_idx_, val_idx_;
  at::Tensor val_index_;
  bool identical_ = true;
  bool averaged_world_ = false;  // the last step ended with a parameter averaging over all workers
  bool side_by_side_ = false;    // Parallelism::workers on the CPU: OpenMP threads
  std::unique_ptr<ReplicaStreams> streams_;  // Parallelism::workers on a GPU; null otherwise
  int threads_ = 1;
  std::unique_ptr<StepGraphs> graphs_;  // with --cuda_graphs; null for eager steps
  bool mean_on_host_ = false;           // Communicator::mean_needs_host(): MPI, a run over processes
  // The rate the updates read on the device (Execution::rate_on_device), and
  // the number it holds; undefined where they take the number itself.
  at::Tensor rate_;
  double rate_held_ = -1;
  // The threads (trainer_threads.cpp). The process's LibTorch thread count,
  // also after a Trainer with its workers side by side set it to 1.
  static int process_threads();
  // LibTorch's one CPU generator seeds the weights of every model a process
  // builds: seeding and building, and restoring its state from a checkpoint,
  // take turns among the runs a process trains at once (--runs_at_once).
  static std::mutex& generator_lock();
  // LibTorch's thread count as this Trainer's mode needs it (1 side by side).
  void claim_threads() const;
  // Runs task(i) for i in [0, n): side by side on up to threads_ threads, or in turn.
  void for_each_local(int n, const std::function<void(int)>& task) const;
  double comm_s_ = 0, eval_s_ = 0, last_divergence_ = 0, checkpoint_s_ = 0;
  std::int64_t comm_bytes_ = 0;
  RunResult result_;  // the series so far
  AssignmentStats assignment_;
  double loss_since_eval_ = 0, elapsed_before_ = 0;
  bool peak_reset_ = false;     // reset_peak_memory() succeeded as run() began
  double peak_before_mib_ = 0;  // this process's peak in the parts before a resume (its checkpoint)
  // The same for the GPU memory LibTorch's allocator reserved (device_memory.hpp).
  double peak_gpu_so_far() const;
  bool gpu_peak_reset_ = false;
  bool shared_process_ = false;  // Execution::shared_process
  double gpu_peak_before_mib_ = 0;
  std::int64_t steps_since_eval_ = 0;
};

// Builds a Trainer and runs it.
RunResult train_run(const RunConfig& config, const ModelFactory& factory, const TrainingData& data,
                    Communicator& comm, ProgressSink* progress = nullptr,
                    Execution execution = {});

}  // namespace dpstudy
