#include "dpstudy/schedule.hpp"

#include <algorithm>
#include <numeric>

namespace dpstudy {

std::vector<Placement> schedule_runs(const std::vector<double>& costs, const std::vector<int>& procs, int world) {
  std::vector<std::size_t> order(costs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return costs[a] > costs[b]; });
  std::vector<double> free_at(static_cast<std::size_t>(world), 0.0);
  std::vector<Placement> out;
  for (std::size_t i : order) {
    std::vector<int> ranks(static_cast<std::size_t>(world));
    std::iota(ranks.begin(), ranks.end(), 0);
    std::stable_sort(ranks.begin(), ranks.end(), [&](int a, int b) { return free_at[std::size_t(a)] < free_at[std::size_t(b)]; });
    ranks.resize(static_cast<std::size_t>(procs[i]));
    std::sort(ranks.begin(), ranks.end());
    Placement p;
    p.run = i;
    for (int r : ranks) p.start = std::max(p.start, free_at[std::size_t(r)]);
    p.end = p.start + costs[i] / double(procs[i]);
    for (int r : ranks) free_at[std::size_t(r)] = p.end;
    p.ranks = std::move(ranks);
    out.push_back(std::move(p));
  }
  std::stable_sort(out.begin(), out.end(), [](const Placement& a, const Placement& b) {
    return a.start != b.start ? a.start < b.start : a.run < b.run;
  });
  return out;
}

int default_procs_per_run(int workers, int world) {
  int p = 1;
  while (p * 2 <= std::min(workers, world)) p *= 2;
  while (workers % p != 0) p /= 2;
  return p;
}

}  // namespace dpstudy
