// Placing a study's runs on the processes of an MPI job: each run takes a group
// of P processes; runs go out largest estimated cost first, each to the P
// processes free earliest. Every process computes the same schedule and then
// runs its own part in order of start, so no coordinator is needed.
#pragma once

#include <cstddef>
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

// The default processes for a run of W workers in a job of N: the largest power
// of two not above min(W, N) that divides W.
int default_procs_per_run(int workers, int world);

}  // namespace dpstudy
