// --dry_run: a study's runs, their state, the schedule and the estimated cost,
// with nothing run.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include "dpstudy/device_memory.hpp"
#include "dpstudy/results.hpp"
#include "job.hpp"

namespace fs = std::filesystem;

namespace dpstudy {

namespace {

// How many rounds (a seed and a search trial each: PlannedRun::round) the
// schedule takes its runs in, where there is more than one.
void print_rounds(const DryRun& d, bool uniform) {
  std::set<std::size_t> rounds;
  for (const Placement& pl : d.schedule) rounds.insert(d.plan->runs[pl.run].round);
  if (rounds.size() < 2) return;
  std::printf(
      "# order: %zu rounds, one per seed and search trial; a round's runs start before the next "
      "round's%s, largest estimated cost first (docs/studies.md#the-order-of-runs)\n",
      rounds.size(), uniform ? "" : " among the runs of a size");
}

// The schedule of the runs left and their estimated cost, in sample-gradients.
void print_schedule(const DryRun& d, std::int64_t todo_cost) {
  const JobOptions& g = d.request->options;
  const std::vector<PlannedRun>& plan = d.plan->runs;
  const bool uniform = std::all_of(d.procs.begin(), d.procs.end(), [&](int q) { return q == d.procs.front(); });
  const bool lanes = !d.lane.empty();
  const int at_once = d.runs_at_once == 0 ? d.predicted_at_once : d.runs_at_once;  // the lanes of each process
  if (lanes) {
    std::printf(
        "# schedule: %zu runs on %d process(es), each training %d at once in lanes (--runs_at_once), taken "
        "in this order as lanes become free; rank, lane, start and end as the estimated costs predict, "
        "each run at its rate alone\n",
        d.schedule.size(), d.processes, at_once);
  } else if (d.dynamic && uniform) {
    const int group_procs = d.procs.empty() ? 1 : d.procs.front();
    std::printf(
        "# schedule: %zu runs on %d process(es) in %d group(s) of %d, taken in this order as groups "
        "become free; ranks, start and end as the estimated costs predict\n",
        d.schedule.size(), d.processes, d.processes / group_procs, group_procs);
  } else if (d.dynamic) {
    std::set<int, std::greater<int>> sizes(d.procs.begin(), d.procs.end());
    std::string sizes_text;
    for (int q : sizes) sizes_text += (sizes_text.empty() ? "" : ", then ") + std::to_string(q);
    std::printf(
        "# schedule: %zu runs on %d process(es) in groups of %s: a group takes the runs of its size in "
        "this order as it becomes free, and splits into smaller groups when none is left; ranks, start "
        "and end as the estimated costs predict\n",
        d.schedule.size(), d.processes, sizes_text.c_str());
  } else {
    std::printf(
        "# schedule: %zu runs on %d process(es), placed in advance, round by round, largest estimated cost first%s\n",
        d.schedule.size(), d.processes,
        g.placement == "static" ? ""
        : !uniform              ? " (its runs' processes per run do not nest: each must divide the next larger, and "
                                  "the smallest the processes)"
                                : " (the processes per run do not divide the processes)");
  }
  print_rounds(d, uniform);
  double makespan = 0;
  std::printf("# %4s  %-16s  %-12s%s  %16s  %16s\n", "run", "run id", "ranks", lanes ? "  lane" : "", "start (samples)",
              "end (samples)");
  for (std::size_t k = 0; k < d.schedule.size(); ++k) {
    const Placement& pl = d.schedule[k];
    std::string ranks;
    for (int q : pl.ranks) ranks += (ranks.empty() ? "" : ",") + std::to_string(q);
    if (lanes) {
      std::printf("  %4zu  %-16s  %-12s  %4d  %16.0f  %16.0f\n", pl.run + 1, plan[pl.run].id.c_str(), ranks.c_str(),
                  d.lane[k], pl.start, pl.end);
    } else {
      std::printf("  %4zu  %-16s  %-12s  %16.0f  %16.0f\n", pl.run + 1, plan[pl.run].id.c_str(), ranks.c_str(),
                  pl.start, pl.end);
    }
    makespan = std::max(makespan, pl.end);
  }
  std::printf("# estimated cost: %lld sample-gradients to compute, %.0f per %s on the longest one",
              (long long)todo_cost, makespan, lanes ? "lane" : "process");
  if (d.complete > 0 && lanes) {  // each run's rate, N of them at once
    std::printf(", %.1f min at the %.0f samples/s its %zu complete runs measured, if %d at once keep it each\n",
                makespan / d.measured_rate / 60.0, d.measured_rate, d.complete, at_once);
  } else if (d.complete > 0) {
    std::printf(", %.1f min at the %.0f samples/s its %zu complete runs measured\n", makespan / d.measured_rate / 60.0,
                d.measured_rate, d.complete);
  } else {
    std::printf(" (no run of this study has finished yet, so no measured rate: run a few, then --dry_run again)\n");
  }
  if (std::any_of(plan.begin(), plan.end(), [](const PlannedRun& q) { return q.config.stop_at_goal; })) {
    std::printf("# runs with stop_at_goal end at their goal: the costs are upper bounds\n");
  }
  if (d.request->stop_beaten) {
    std::printf(
        "# search_stop = beaten: a trial ends where another trial of its combination has reached the goal in "
        "as few steps; the costs count it for the %zu run(s) to do whose combination has a complete trial at the "
        "goal, and not for the others (docs/studies.md#beaten-trials)\n",
        d.bounded_by_best);
  }
}

}  // namespace

void print_dry_run(const DryRun& d) {
  const Request& r = *d.request;
  const JobOptions& g = r.options;
  const std::vector<PlannedRun>& plan = d.plan->runs;
  const auto complete = [&](std::size_t i) { return d.state[i] == std::int64_t(RunFileState::complete); };
  std::string swept_text;
  for (const auto& k : r.swept) swept_text += (swept_text.empty() ? "" : ", ") + k;
  std::printf("# study %s: %zu runs (%zu excluded, %zu already complete), swept: %s\n", r.name.c_str(), plan.size(),
              d.plan->excluded, d.complete, r.swept.empty() ? "-" : swept_text.c_str());
  std::printf("# results: %s; %d process(es)\n", r.study_dir.c_str(), d.processes);
  // Planned for another job, the default threads are those of this process's place, not of that job's.
  const bool guessed = g.dry_run_processes > 0 && !g.threads_given;
  const char* guess = guessed ? " (as this process would set them: give --threads as that job will)" : "";
  if (d.device != "cpu") {  // on a GPU, --parallel says whether the workers' kernels may overlap
    std::printf(
        "# threads: %d per process%s, for the host's part; device %s: each run launches its workers one "
        "after another; --parallel %s: %zu run(s) with each worker on a CUDA stream of its own, %zu on one "
        "stream (docs/gpu.md#replica-streams)\n",
        d.threads, guess, d.device.c_str(), g.parallel.c_str(), d.side_by_side, plan.size() - d.side_by_side);
    if (d.gpus > 0) {
      // Process r of a node trains on cuda:(r mod G): its runs share that GPU with those of the others.
      const int per_gpu = processes_per_gpu(d.node_processes, d.gpus);
      std::string at_once = d.runs_at_once == 0
                                ? "each process as many runs at once as fit, sized from a first run's peak memory "
                                  "(--runs_at_once auto)"
                                : "up to " + std::to_string(per_gpu * d.runs_at_once) + " run(s) at once on each";
      if (d.predicted_at_once > 0) {  // auto, with a measured peak to size the lanes by now
        char buf[200];
        std::snprintf(buf, sizeof buf, "; its complete runs peaked at up to %.0f MiB: %d run(s) at once each",
                      d.complete_peak_gpu_mib, d.predicted_at_once);
        at_once += buf;
      }
      std::printf(
          "# GPUs: %d process(es) on this node's %d GPU(s): %s; --cuda_graphs %s: %zu of %zu runs graphed "
          "(docs/gpu.md)\n",
          d.node_processes, d.gpus, at_once.c_str(), g.cuda_graphs.c_str(), d.graphed, plan.size());
    }
  } else {
    std::printf(
        "# threads: %d per process%s, --parallel %s: %zu run(s) with their workers side by side (one "
        "thread each: the bits of one thread), %zu spreading each operation over the threads "
        "(docs/engine.md#threads)\n",
        d.threads, guess, g.parallel.c_str(), d.side_by_side, plan.size() - d.side_by_side);
    if (d.runs_at_once > 1) {
      std::printf("# runs at once: %d per process, each on one thread (--runs_at_once): up to %d in this job\n",
                  d.runs_at_once, d.runs_at_once * d.processes);
    }
  }
  for (const auto& note : d.data_notes) std::printf("%s\n", note.c_str());
  for (const auto& note : d.plan->notes) std::printf("%s\n", note.c_str());
  // What another job on this study is doing shows in the folder: a claim is a
  // run being trained now, a checkpoint a run that will resume.
  std::set<std::string> claimed;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(fs::path(r.study_dir) / "runs", ec)) {
    const std::string f = entry.path().filename().string();
    if (f.size() > 6 && f.compare(f.size() - 6, 6, ".claim") == 0 &&
        !ClaimQueue::is_stale(entry.path().string(), g.claim_timeout)) {
      claimed.insert(f.substr(0, f.size() - 6));
    }
  }
  auto state_of = [&](std::size_t i) -> const char* {
    if (complete(i)) return g.force ? "rerun" : "complete";
    if (claimed.count(plan[i].id)) return "running";
    if (d.resumable.count(plan[i].id)) return "resumable";
    return d.state[i] == std::int64_t(RunFileState::corrupt) ? "corrupt" : "to run";
  };
  std::printf("# %4s  %-16s  %-9s  %14s  %s\n", "run", "run id", "state", "cost (samples)", "axes");
  std::int64_t todo_cost = 0;
  std::map<std::string, std::size_t> counts;
  for (std::size_t i = 0; i < plan.size(); ++i) {
    const std::string shared = plan[i].cells > 1 ? " (shared by " + std::to_string(plan[i].cells) + " cells)" : "";
    std::printf("  %4zu  %-16s  %-9s  %14lld  %s%s\n", i + 1, plan[i].id.c_str(), state_of(i), (long long)plan[i].cost,
                axes_text(plan[i].values, r.swept).c_str(), shared.c_str());
    ++counts[state_of(i)];
    if (g.force || !complete(i)) todo_cost += plan[i].cost;
  }
  // At a glance, for a study of thousands of runs watched while it runs.
  std::string states;
  for (const char* s : {"complete", "rerun", "running", "resumable", "corrupt", "to run"}) {
    if (counts.count(s)) states += (states.empty() ? "" : ", ") + std::to_string(counts[s]) + " " + s;
  }
  std::printf("# runs: %s\n", states.c_str());
  print_schedule(d, todo_cost);
}

}  // namespace dpstudy
