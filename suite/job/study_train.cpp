// Where a study's runs train: claimed one at a time from the shared queue
// (dynamic placement) or placed in advance (static), on blocks of processes,
// several at once on a GPU in lanes sized from a first run's peak memory.
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "dpstudy/cuda_streams.hpp"
#include "dpstudy/device_memory.hpp"
#include "dpstudy/hdf5.hpp"
#include "dpstudy/stop.hpp"
#include "study_job.hpp"

namespace dpstudy {

// A run whose file appeared or changed since the plan was done by another
// group or job meanwhile.
bool StudyJob::finished_elsewhere(std::size_t k) const {
  const std::int64_t now = stamp(ids_[k]);
  return now != 0 && now != planned_stamp_[schedule_[k].run];
}

bool StudyJob::done_elsewhere(std::size_t k) {
  if (!finished_elsewhere(k)) {
    passed_.insert(k);
    return false;
  }
  passed_.erase(k);
  if (other_data_seen_.empty()) {
    const std::string file = (runs_dir_ / (ids_[k] + ".h5")).string();
    try {  // a file damaged meanwhile is the run's own business (it runs again), not a data mismatch
      if (inspect_run_file(file, nullptr) == RunFileState::complete) {
        other_data_seen_ = other_data(plan_[schedule_[k].run], file, h5::File::open_read(file));
      }
    } catch (const Error&) {
    }
  }
  return true;
}

void StudyJob::look_at_passed() {
  for (const std::size_t k : std::vector<std::size_t>(passed_.begin(), passed_.end())) done_elsewhere(k);
}

// Keeps the claim on schedule position k live while its run trains.
std::function<void()> StudyJob::heartbeat_of(std::size_t k) {
  auto last = std::make_shared<Clock::time_point>(Clock::now());  // the run's own: runs train at once
  return [this, k, last] {
    if (std::chrono::duration<double>(Clock::now() - *last).count() < heartbeat_s_) return;
    queue_->heartbeat(k);
    *last = Clock::now();
  };
}

// The runs to do in the schedule's order, each taken through its claim.
void StudyJob::train() {
  study_start_ = Clock::now();
  index_ = std::make_unique<StudyIndex>(job_.request.study_dir, job_.request.name);
  queue_ = std::make_unique<ClaimQueue>(runs_dir_.string(), ids_, options_.claim_timeout,
                                        [this](std::size_t k) { return done_elsewhere(k); });
  heartbeat_s_ = std::min(60.0, options_.claim_timeout / 4);
  install_stop_handlers();
  if (dynamic_) {
    train_dynamic();
  } else {
    train_static();
  }
}

// Blocks of consecutive ranks, largest first: each takes the runs of its size,
// then splits into the blocks of the next size (nested_blocks). Once every
// process is through, the blocks form again, largest first, to take what
// another job has left stale since a block split (its processes had nothing
// else to do).
void StudyJob::train_dynamic() {
  for (std::size_t k = 0; k < schedule_.size(); ++k) of_size_[int(schedule_[k].ranks.size())].push_back(k);
  const std::vector<Block> blocks = nested_blocks(procs_, session_.size(), session_.rank());
  if (job_.runs_at_once != 1 && !blocks.empty()) {  // every run on one process (resolve_runs_at_once)
    train_lanes(blocks.front());
    return;
  }
  for (const Block& b : blocks) take_runs(b, false);
  if (blocks.size() > 1) {
    for (const Block& b : blocks) take_runs(b, true);
  }
}

void StudyJob::take_runs(const Block& b, bool final_look, bool probe) {
  const std::vector<std::size_t>& positions = of_size_.at(b.size);
  std::vector<std::string> size_ids;
  for (std::size_t k : positions) size_ids.push_back(ids_[k]);
  ClaimQueue size_queue(runs_dir_.string(), size_ids, options_.claim_timeout,
                        [&](std::size_t j) { return done_elsewhere(positions[j]); });
  Placement mine;
  for (int r = b.first; r < b.first + b.size; ++r) mine.ranks.push_back(r);
  const bool first = session_.rank() == b.first;
#if DPSTUDY_WITH_MPI
  std::unique_ptr<mpi::RunGroup> group;
  if (b.size > 1) {
    group =
        std::make_unique<mpi::RunGroup>(mine.ranks, int(plan_.size()) + (final_look ? session_.size() : 0) + b.first);
  }
#else
  (void)final_look;
#endif
  for (int taken = 0;; ++taken) {
    long long j = -1;
    if (first) {
      const std::lock_guard<std::mutex> shared(lock_);
      look_at_passed();
      if (probe && taken == 0) j = probe_position(positions, size_queue);
      if (j < 0 && !(probe && taken > 0) && !stopped_ && !stop_requested() && other_data_seen_.empty()) {
        j = size_queue.next();
      }
      if (j >= 0) passed_.erase(positions[std::size_t(j)]);
      if (j >= 0 && !other_data_seen_.empty()) {  // seen on the way to run j: it is not trained here
        queue_->release(positions[std::size_t(j)]);
        j = -1;
      }
    }
#if DPSTUDY_WITH_MPI
    if (group) group->broadcast(j);
#endif
    if (j < 0) break;
    const std::size_t k = positions[std::size_t(j)];
    mine.run = schedule_[k].run;
    const double work = double(plan_[mine.run].cost) / b.size;
    // As if every process worked at this one's rate so far: the study takes
    // total / processes of it. Which process has which run is not needed.
    const StudyEta eta = [this, work](double fraction, double run_eta) {
      const std::lock_guard<std::mutex> shared(lock_);
      const double done = taken_work_ + fraction * work;
      if (done <= 0) return 0.0;
      return std::max(run_eta, elapsed_s() * (total_ / (double(session_.size()) * lanes_ * done) - 1));
    };
    for (;;) {  // again, with fewer at once, after running out of the GPU's memory beside others
      try {
        run_one(mine, eta, heartbeat_of(k));
        break;
      } catch (const c10::OutOfMemoryError&) {
        if (!fewer_at_once(mine.run)) throw;
      }
    }
    if (first) queue_->release(k);
  }
}

long long StudyJob::probe_position(const std::vector<std::size_t>& positions, ClaimQueue& queue) {
  std::int64_t most = -1;
  long long best = -1;
  for (std::size_t j = 0; j < positions.size(); ++j) {
    const RunConfig& c = plan_[schedule_[positions[j]].run].config;
    const std::int64_t samples = c.global_batch();
    if (samples > most) {
      most = samples;
      best = (long long)j;
    }
  }
  return best >= 0 && queue.take(std::size_t(best)) ? best : -1;
}

// Each thread takes the next run as it becomes free, as a process does, on a
// CUDA stream of its own on a GPU (one no other lane is given). auto on a GPU
// trains the run with the largest batch alone first, then as many at once as
// its peak memory allows.
// An error in one run stops the others as a signal would (they checkpoint),
// and is the job's once all are through.
void StudyJob::train_lanes(const Block& b) {
  const auto lane = [this, b](bool probe) {
    try {
      const OwnStreamGuard own(job_.device);  // not shared with another lane: see cuda_streams.hpp
      take_runs(b, false, probe);
    } catch (...) {
      const std::lock_guard<std::mutex> shared(lock_);
      if (!lane_error_) {
        lane_error_ = std::current_exception();
        job_.current_run = lane_run;
      }
      stop_for("an error in another run of this process");
    }
  };
  int lanes = job_.runs_at_once;
  if (lanes == 0) {
    std::thread(lane, true).join();
    lanes = lane_error_ || stopped_ || stop_requested() ? 1 : lanes_after_probe();
  }
  // No more threads than runs to do: each run records how many shared its process.
  const auto to_do = of_size_.find(b.size);
  lanes = std::max(1, std::min(lanes, to_do == of_size_.end() ? 1 : int(to_do->second.size())));
  {
    const std::lock_guard<std::mutex> shared(lock_);
    lanes_ = lanes;
    execution_.shared_process = lanes > 1;
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < lanes; ++t) threads.emplace_back(lane, false);
  for (std::thread& t : threads) t.join();
  if (lane_error_) std::rethrow_exception(lane_error_);
}

bool StudyJob::fewer_at_once(std::size_t run) {
  const std::lock_guard<std::mutex> shared(lock_);
  const int others = tf32_runs_ + other_runs_;  // this run's turn is over
  if (others == 0) return false;
  allowed_ = others;
  lanes_ = std::min(lanes_, others);
  const std::string n = std::to_string(others);
  out_.line("[run " + std::to_string(run + 1) + "/" + std::to_string(plan_.size()) + "] " + plan_[run].id +
            ": out of the GPU's memory beside " + n +
            " other run(s); trained again when fewer train at once: at most " + n + " from now on");
  return true;
}

int StudyJob::lanes_after_probe() {
  const int sharing = processes_per_gpu(session_.local_size(), int(at::detail::getCUDAHooks().getNumGPUs()));
  const double device_mib = device_memory_mib(job_.device);
  const int n = runs_that_fit(device_mib, sharing, last_peak_gpu_mib_);
  char buf[300];
  std::snprintf(buf, sizeof buf,
                "# --runs_at_once auto: a first run peaked at %.0f MiB of the GPU's %.0f MiB, shared by %d "
                "process(es): %d run(s) at once (docs/studies.md#runs-at-once)",
                last_peak_gpu_mib_, device_mib, sharing, n);
  out_.line(buf);
  return n;
}

// Placed in advance; a run another job holds is left to it. Once a stop is
// asked for, the first process of each run's ranks says so to the others.
void StudyJob::train_static() {
  for (std::size_t k = 0; k < schedule_.size(); ++k) {
    const Placement& pl = schedule_[k];
    if (std::find(pl.ranks.begin(), pl.ranks.end(), session_.rank()) == pl.ranks.end()) continue;
    const StudyEta eta = [this, &pl](double fraction, double) {
      const double at = (pl.start + (pl.end - pl.start) * fraction) / std::max(makespan_, 1e-9);
      return at > 0 ? elapsed_s() * (1 - at) / at : 0.0;
    };
    const auto claim = [this, k] {
      look_at_passed();
      if (stopped_ || stop_requested() || !other_data_seen_.empty()) return kStopping;
      if (!queue_->take(k)) return kHeld;
      passed_.erase(k);
      return kMine;
    };
    const bool ran = run_one(pl, eta, heartbeat_of(k), claim);
    if (ran && session_.rank() == pl.ranks.front()) queue_->release(k);
  }
}

}  // namespace dpstudy
