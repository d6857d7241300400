#include "dpstudy/schedule.hpp"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <numeric>

#include "dpstudy/file_io.hpp"
#include "dpstudy/runtime_info.hpp"

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

ClaimQueue::ClaimQueue(std::string dir, std::vector<std::string> ids) : dir_(std::move(dir)), ids_(std::move(ids)) {}

long long ClaimQueue::next() {
  const std::string who = host_name() + " " + std::to_string(::getpid()) + "\n";
  while (cursor_ < ids_.size()) {
    const std::size_t i = cursor_++;
    if (dir_.empty() || create_exclusive(dir_ + "/" + ids_[i] + ".claim", who)) return static_cast<long long>(i);
  }
  return -1;
}

void ClaimQueue::remove_claims(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() > 6 && name.compare(name.size() - 6, 6, ".claim") == 0) ::unlink((dir + "/" + name).c_str());
  }
  ::closedir(d);
}

int default_procs_per_run(int workers, int world) {
  int p = 1;
  while (p * 2 <= std::min(workers, world)) p *= 2;
  while (workers % p != 0) p /= 2;
  return p;
}

}  // namespace dpstudy
