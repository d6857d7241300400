// Placing a study's runs on the processes of an MPI job: each run takes a group
// of P processes; runs go out largest estimated cost first, each to the P
// processes free earliest. Every process computes the same schedule and then
// runs its own part in order of start, so no coordinator is needed.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace dpstudy {

struct Placement {
  std::size_t run = 0;     // index into the study's run list
  std::vector<int> ranks;  // world ranks, ascending; ranks[0] leads (writes the run file)
  double start = 0, end = 0;  // in units of estimated cost per process
};

// `costs[i]` of run i (sample-gradients), `procs[i]` processes it needs (<= world).
// Sorted by start, then run index.
std::vector<Placement> schedule_runs(const std::vector<double>& costs, const std::vector<int>& procs, int world);

// Runs taken as processes become free: for studies whose runs all take the same
// number of processes P (dividing the job's), the processes form fixed groups of P, and the
// first process of a group takes the next run (in the schedule's order) that no
// other group has taken, by creating <dir>/<run id>.claim exclusively. A group
// that draws short runs (a run stopped at its goal, a faster configuration)
// takes more of them; the estimates only order the runs. The results folder
// must be one file system for all processes, as for the run files themselves.
class ClaimQueue {
 public:
  // `ids`: the runs to do, in the order to take them. An empty `dir` (a job of
  // one group) takes them in order without claim files.
  ClaimQueue(std::string dir, std::vector<std::string> ids);
  // The position in `ids` of the next run this process takes, or -1 when every
  // run has been taken. Each run is taken once among all processes until
  // remove_claims(). Throws DataError when the folder cannot be written.
  long long next();
  // Removes every claim under `dir`: at the start of a study (claims of a killed
  // job) and at its end.
  static void remove_claims(const std::string& dir);

 private:
  std::string dir_;
  std::vector<std::string> ids_;
  std::size_t cursor_ = 0;  // runs before it are taken, by this process or another
};

// The default processes for a run of W workers in a job of N: the largest power
// of two not above min(W, N) that divides W.
int default_procs_per_run(int workers, int world);

}  // namespace dpstudy
