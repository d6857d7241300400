// Placing a study's runs on the processes of an MPI job: each run takes a group
// of P processes; runs go out round by round (a seed, a search trial: see
// PlannedRun::round), largest estimated cost first within a round, each to the
// P processes free earliest. Every process computes the same schedule and then
// runs its own part in order of start, so no coordinator is needed.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace dpstudy {

struct Placement {
  std::size_t run = 0;     // index into the study's run list
  std::vector<int> ranks;  // world ranks, ascending; ranks[0] leads (writes the run file)
  double start = 0, end = 0;  // in units of estimated cost per process
};

// The order runs go out in: by `rounds[i]` (all one round when empty), then
// by `costs[i]`, largest first; ties in index order.
std::vector<std::size_t> take_order(const std::vector<double>& costs, const std::vector<std::size_t>& rounds);

// `costs[i]` of run i (sample-gradients), `procs[i]` processes it needs (<= world),
// `rounds[i]` its round (take_order). Sorted by start, then run index.
std::vector<Placement> schedule_runs(const std::vector<double>& costs, const std::vector<int>& procs, int world,
                                     const std::vector<std::size_t>& rounds = {});

// Runs taken as processes become free: the processes form groups of P (with
// runs of several P, nested blocks: see nested_blocks below), and the
// first process of a group takes the next run (in the schedule's order) that no
// other group has taken, by creating <dir>/<run id>.claim exclusively. A group
// that draws short runs (a run stopped at its goal, a faster configuration)
// takes more of them; the estimates only order the runs. The results folder
// must be one file system for all processes, as for the run files themselves.
//
// Several jobs on one study (a job array, or a second job started later) share
// the claims: a claim holds "<host> <pid> <Slurm job id> <restart count>" of its
// group's first process and is live while that process refreshes it
// (heartbeat()); it is stale once it is older than `stale_after_s`, or at once
// when it names this host and a process that no longer exists (a killed job
// restarted here) or an earlier start of this Slurm job (requeued, perhaps on
// other nodes). A stale claim is taken over; a run finished by another job
// since this one planned is skipped.
class ClaimQueue {
 public:
  // `ids`: the runs to do, in the order to take them. An empty `dir` takes them
  // in order without claim files. `finished_elsewhere(i)`, if given, says
  // whether run i got its result from another job after the plan was made.
  ClaimQueue(std::string dir, std::vector<std::string> ids, double stale_after_s = 600,
             std::function<bool(std::size_t)> finished_elsewhere = {});
  // The position in `ids` of the next run this process takes, or -1 when every
  // run has been taken. Each run is taken once among all processes while its
  // claim is live; runs held by another job are looked at once more at the end.
  // Throws DataError when the folder cannot be written.
  long long next();
  // Takes run i if no live claim holds it and it was not finished elsewhere
  // (static placement: each run goes to the processes planned for it).
  bool take(std::size_t i);
  // Keeps this process's claim on run i live (its modification time).
  void heartbeat(std::size_t i) const;
  // Gives up the claim on run i: its result is written.
  void release(std::size_t i) const;
  // Whether the claim (or a temporary file named "<...>.<host>.<pid>.tmp") at
  // `path` belongs to no live process: see above.
  static bool is_stale(const std::string& path, double stale_after_s);
  // Removes the claim at `path` if it is stale, under the run's take-over token
  // (`<path>.takeover`): true for one of the jobs that find one stale claim at
  // once, and no job removes a claim made after it looked. `after_look` runs
  // with the token held, before the second look (tests race another job there).
  static bool take_over(const std::string& path, double stale_after_s, const std::function<void()>& after_look = {});
  // Removes the stale claims under `dir` (a killed job's): at the start of a study.
  static void remove_stale_claims(const std::string& dir, double stale_after_s);
  // Gives up the claims this process holds, if any (one per run it trains at
  // once): when it stops on an error.
  static void release_held();

 private:
  enum class Take { taken, held, finished };
  Take try_take(std::size_t i);
  std::string claim_path(std::size_t i) const { return dir_ + "/" + ids_[i] + ".claim"; }
  std::string dir_;
  std::vector<std::string> ids_;
  double stale_after_s_;
  std::function<bool(std::size_t)> finished_elsewhere_;
  std::size_t cursor_ = 0;  // runs before it are taken, by this process or another
  std::vector<std::size_t> held_;  // runs another job held when this one came by
  std::size_t rescan_ = 0;         // held_ before it looked at again
};

// Dynamic placement when runs take different numbers of processes (a sweep of
// worker counts): the job is cut into blocks of the largest P, what is left over
// into blocks of the next P, and so on; a block whose P has no run left to take
// splits into blocks of the next smaller P and goes on taking those (and when
// all are through, the blocks form again once, largest first, for runs another
// job left stale meanwhile). It needs
// every P to divide the next larger one and the smallest to divide the job's
// processes (powers of two, as default_procs_per_run gives, always do).
struct Block {
  int first = 0, size = 1;  // world ranks first .. first + size - 1
  bool operator==(const Block& o) const { return first == o.first && size == o.size; }
};
bool sizes_nest(const std::vector<int>& procs, int world);
// The blocks `rank` passes through, largest first; empty unless sizes_nest.
std::vector<Block> nested_blocks(const std::vector<int>& procs, int world, int rank);

// What dynamic placement will do if every run takes its estimated cost: blocks
// as above, each taking the next run of its size (take_order) when it is free
// (the lowest first rank first when several are), and splitting when none is left. Sorted by start,
// then run index; the order of a size's runs is the order their blocks take them.
// Empty unless sizes_nest(procs, world).
std::vector<Placement> schedule_nested(const std::vector<double>& costs, const std::vector<int>& procs, int world,
                                       const std::vector<std::size_t>& rounds = {});

// The default processes for a run of W workers in a job of N: the largest power
// of two not above min(W, N) that divides W.
int default_procs_per_run(int workers, int world);

}  // namespace dpstudy
