#include "dpstudy/schedule.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <mutex>
#include <numeric>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "dpstudy/file_io.hpp"
#include "dpstudy/runtime_info.hpp"

namespace dpstudy {

std::vector<std::size_t> take_order(const std::vector<double>& costs, const std::vector<std::size_t>& rounds) {
  if (!rounds.empty() && rounds.size() != costs.size()) {
    throw std::invalid_argument("take_order: " + std::to_string(rounds.size()) + " rounds for " +
                                std::to_string(costs.size()) + " runs");
  }
  std::vector<std::size_t> order(costs.size());
  std::iota(order.begin(), order.end(), 0);
  const auto round = [&](std::size_t i) { return rounds.empty() ? 0 : rounds[i]; };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return round(a) != round(b) ? round(a) < round(b) : costs[a] > costs[b];
  });
  return order;
}

std::vector<Placement> schedule_runs(const std::vector<double>& costs, const std::vector<int>& procs, int world,
                                     const std::vector<std::size_t>& rounds) {
  std::vector<double> free_at(static_cast<std::size_t>(world), 0.0);
  std::vector<Placement> out;
  for (std::size_t i : take_order(costs, rounds)) {
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

ClaimQueue::ClaimQueue(std::string dir, std::vector<std::string> ids, double stale_after_s,
                       std::function<bool(std::size_t)> finished_elsewhere)
    : dir_(std::move(dir)),
      ids_(std::move(ids)),
      stale_after_s_(stale_after_s),
      finished_elsewhere_(std::move(finished_elsewhere)) {}

namespace {

// Under Slurm, which job and which start of it (a requeued job keeps its id and
// counts its restarts): "<job id> <restart>", or "- 0" outside Slurm.
std::string slurm_job() {
  const char* id = std::getenv("SLURM_JOB_ID");
  const char* restart = std::getenv("SLURM_RESTART_COUNT");
  return std::string(id && *id ? id : "-") + " " + (restart && *restart ? restart : "0");
}

// A claim's text: "<host> <pid> <Slurm job id> <restart count>".
std::string holder_text() { return host_name() + " " + std::to_string(::getpid()) + " " + slurm_job() + "\n"; }

// The claims this process holds now (one per run it trains at once: --runs_at_once
// trains several in threads), for release_held().
struct HeldClaims {
  std::mutex lock;
  std::set<std::string> paths;
};
HeldClaims& held_claims() {
  static HeldClaims held;
  return held;
}

}  // namespace

void ClaimQueue::release_held() {
  HeldClaims& held = held_claims();
  const std::lock_guard<std::mutex> guard(held.lock);
  for (const std::string& path : held.paths) ::unlink(path.c_str());
  held.paths.clear();
}

long long ClaimQueue::next() {
  // Once through the runs in order, then once more through those another job
  // held: its holder may have died since (a job killed just before this one started).
  while (cursor_ < ids_.size() || rescan_ < held_.size()) {
    const bool first_pass = cursor_ < ids_.size();
    const std::size_t i = first_pass ? cursor_++ : held_[rescan_++];
    const Take t = try_take(i);
    if (t == Take::taken) return static_cast<long long>(i);
    if (t == Take::held && first_pass) held_.push_back(i);
  }
  return -1;
}

bool ClaimQueue::take(std::size_t i) { return try_take(i) == Take::taken; }

ClaimQueue::Take ClaimQueue::try_take(std::size_t i) {
  if (finished_elsewhere_ && finished_elsewhere_(i)) return Take::finished;
  if (dir_.empty()) return Take::taken;
  const std::string who = holder_text();
  const std::string path = claim_path(i);
  bool mine = create_exclusive(path, who);
  if (!mine && take_over(path, stale_after_s_)) mine = create_exclusive(path, who);
  if (!mine) return Take::held;
  if (finished_elsewhere_ && finished_elsewhere_(i)) {  // between the check above and the claim
    release(i);
    return Take::finished;
  }
  HeldClaims& held = held_claims();
  const std::lock_guard<std::mutex> guard(held.lock);
  held.paths.insert(path);
  return Take::taken;
}

void ClaimQueue::heartbeat(std::size_t i) const {
  if (!dir_.empty()) ::utimensat(AT_FDCWD, claim_path(i).c_str(), nullptr, 0);
}

void ClaimQueue::release(std::size_t i) const {
  if (dir_.empty()) return;
  ::unlink(claim_path(i).c_str());
  HeldClaims& held = held_claims();
  const std::lock_guard<std::mutex> guard(held.lock);
  held.paths.erase(claim_path(i));
}

bool ClaimQueue::is_stale(const std::string& path, double stale_after_s) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;  // gone: nothing to take over
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  const double age = double(now.tv_sec - st.st_mtim.tv_sec) + 1e-9 * double(now.tv_nsec - st.st_mtim.tv_nsec);
  if (age > stale_after_s) return true;
  // The holder: a claim's text "<host> <pid> <Slurm job> <restart>", a temporary
  // file's name "<...>.<host>.<pid>.tmp".
  const std::string host = host_name();
  long pid = 0;
  bool here = false;
  if (path.size() > 4 && path.compare(path.size() - 4, 4, ".tmp") == 0) {
    const std::string stem = path.substr(0, path.size() - 4);
    const std::size_t dot = stem.rfind('.');
    if (dot != std::string::npos) {
      const std::string tail = stem.substr(dot + 1), head = stem.substr(0, dot);
      here = head.size() > host.size() && head.compare(head.size() - host.size(), host.size(), host) == 0 &&
             head[head.size() - host.size() - 1] == '.';
      pid = std::strtol(tail.c_str(), nullptr, 10);
    }
  } else {
    std::ifstream in(path);
    std::string holder_host, job;
    long restart = 0;
    in >> holder_host >> pid;
    here = bool(in) && holder_host == host;
    // An earlier start of this Slurm job (requeued, maybe onto other nodes) held it.
    if (in >> job >> restart && job != "-") {
      std::istringstream mine(slurm_job());
      std::string my_job;
      long my_restart = 0;
      mine >> my_job >> my_restart;
      if (job == my_job && restart < my_restart) return true;
    }
  }
  // A process of this host that is gone, or a zombie nobody reaped: its job was
  // killed (a pid that another process has taken since keeps the claim until it ages out).
  if (!here || pid <= 0) return false;
  if (::kill(pid_t(pid), 0) != 0) return errno == ESRCH;
  std::ifstream stat_file("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat_file, line);
  const std::size_t paren = line.rfind(')');  // "pid (command) state ..."
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z';
}

namespace {

// What tells one claim (or take-over token) file from another that replaced it
// at the same path: a new one may get the freed inode number back, but not also
// the same text (its holder's host and pid) and modification time.
struct FileIdentity {
  bool exists = false;
  dev_t dev = 0;
  ino_t ino = 0;
  long long mtime_ns = 0;
  std::string text;
  bool operator==(const FileIdentity& o) const {
    return exists == o.exists && dev == o.dev && ino == o.ino && mtime_ns == o.mtime_ns && text == o.text;
  }
};

FileIdentity identify(const std::string& path) {
  FileIdentity id;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return id;
  id.exists = true;
  id.dev = st.st_dev;
  id.ino = st.st_ino;
  id.mtime_ns = (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
  std::ifstream in(path, std::ios::binary);
  id.text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return id;
}

// Removes `path` if it is still the file `seen`, as one step against others
// doing the same: renamed aside (atomic: one of them gets it) and compared; a
// newer file moved by mistake goes straight back. The aside name is a temporary
// file of this process ("<...>.<host>.<pid>.tmp"), cleared as stale if we die
// holding it.
bool remove_if_same(const std::string& path, const FileIdentity& seen) {
  const std::string aside = path + "." + host_name() + "." + std::to_string(::getpid()) + ".tmp";
  if (::rename(path.c_str(), aside.c_str()) != 0) return false;  // another one moved it first
  const bool same = identify(aside) == seen;
  if (!same) (void)::link(aside.c_str(), path.c_str());
  ::unlink(aside.c_str());
  return same;
}

}  // namespace

bool ClaimQueue::take_over(const std::string& path, double stale_after_s, const std::function<void()>& after_look) {
  if (!is_stale(path, stale_after_s)) return false;
  // Judging a claim stale and removing it are two steps, and between them
  // another job may take the run over: unlinking then would remove its fresh
  // claim. So a take-over holds the run's token, "<claim>.takeover", made
  // exclusively like a claim, and judges again under it: of the jobs that find
  // one stale claim at once, one removes it, and the others find the token
  // held (or, after it, a live claim). A token outlives its holder only if
  // that died in the instant it held it; it is then stale like a claim.
  const std::string token = path + ".takeover";
  const std::string who = holder_text();
  if (!create_exclusive(token, who)) {
    const FileIdentity seen = identify(token);
    if (!seen.exists || !is_stale(token, stale_after_s) || !remove_if_same(token, seen) ||
        !create_exclusive(token, who)) {
      return false;
    }
  }
  if (after_look) after_look();
  // Removed only if still the file judged stale: a holder that was merely slow
  // (stale by age) may give its claim up this instant and a new job claim anew.
  const FileIdentity seen = identify(path);
  const bool taken = seen.exists && is_stale(path, stale_after_s) && remove_if_same(path, seen);
  ::unlink(token.c_str());
  return taken;
}

void ClaimQueue::remove_stale_claims(const std::string& dir, double stale_after_s) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    const std::string path = dir + "/" + name;
    const auto ends_with = [&](const std::string& tail) {
      return name.size() > tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
    };
    if (ends_with(".claim")) take_over(path, stale_after_s);
    if (ends_with(".claim.takeover") && is_stale(path, stale_after_s)) remove_if_same(path, identify(path));
  }
  ::closedir(d);
}

namespace {
std::vector<int> distinct_descending(std::vector<int> procs) {
  std::sort(procs.begin(), procs.end(), std::greater<int>());
  procs.erase(std::unique(procs.begin(), procs.end()), procs.end());
  return procs;
}
}  // namespace

bool sizes_nest(const std::vector<int>& procs, int world) {
  const std::vector<int> sizes = distinct_descending(procs);
  if (sizes.empty() || sizes.back() < 1 || sizes.front() > world || world % sizes.back() != 0) return false;
  for (std::size_t j = 0; j + 1 < sizes.size(); ++j) {
    if (sizes[j] % sizes[j + 1] != 0) return false;
  }
  return true;
}

std::vector<Block> nested_blocks(const std::vector<int>& procs, int world, int rank) {
  if (!sizes_nest(procs, world) || rank < 0 || rank >= world) return {};
  const std::vector<int> sizes = distinct_descending(procs);
  // The block this rank starts in: ranks past the last whole block of one size
  // start at the next smaller size.
  std::size_t level = 0;
  int base = 0;
  while (rank >= base + (world - base) / sizes[level] * sizes[level]) {
    base += (world - base) / sizes[level] * sizes[level];
    ++level;
  }
  std::vector<Block> out;
  int first = base + (rank - base) / sizes[level] * sizes[level];
  for (; level < sizes.size(); ++level) {
    first += (rank - first) / sizes[level] * sizes[level];
    out.push_back({first, sizes[level]});
  }
  return out;
}

std::vector<Placement> schedule_nested(const std::vector<double>& costs, const std::vector<int>& procs, int world,
                                       const std::vector<std::size_t>& rounds) {
  if (costs.empty() || !sizes_nest(procs, world)) return {};
  const std::vector<int> sizes = distinct_descending(procs);
  // Each size's runs, in take_order.
  std::map<int, std::vector<std::size_t>> waiting;
  for (std::size_t i : take_order(costs, rounds)) waiting[procs[i]].push_back(i);
  std::map<int, std::size_t> taken;  // size -> runs of it taken so far
  // Free blocks by (time, first rank); each rank's first block to start with.
  std::set<std::tuple<double, int, int>> free;  // time, first rank, size
  for (int rank = 0; rank < world; ++rank) {
    const Block b = nested_blocks(procs, world, rank).front();
    free.insert({0.0, b.first, b.size});
  }
  std::vector<Placement> out;
  while (!free.empty()) {
    const auto [t, first, size] = *free.begin();
    free.erase(free.begin());
    std::size_t& next = taken[size];
    if (next < waiting[size].size()) {
      Placement p;
      p.run = waiting[size][next++];
      p.start = t;
      p.end = t + costs[p.run] / double(size);
      for (int r = first; r < first + size; ++r) p.ranks.push_back(r);
      free.insert({p.end, first, size});
      out.push_back(std::move(p));
      continue;
    }
    const auto smaller = std::find(sizes.begin(), sizes.end(), size) + 1;
    if (smaller == sizes.end()) continue;  // nothing left for this block
    for (int f = first; f < first + size; f += *smaller) free.insert({t, f, *smaller});
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
