// Placing runs on processes: the static schedule and the claims of dynamic placement.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <fstream>
#include <iterator>
#include <set>

#include "dpstudy/error.hpp"
#include "dpstudy/runtime_info.hpp"
#include "dpstudy/schedule.hpp"
#include "test_support.hpp"

using namespace dpstudy;
using namespace dpstudy::test;

namespace {

void write_claim(const std::string& path, const std::string& holder) { std::ofstream(path) << holder << "\n"; }

// Sets the file's modification time `seconds` into the past.
void age(const std::string& path, double seconds) {
  timespec t[2];
  ::clock_gettime(CLOCK_REALTIME, &t[0]);
  t[0].tv_sec -= time_t(seconds);
  t[1] = t[0];
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), t, 0), 0) << path;
}

}  // namespace

namespace {

// Every run placed once on its number of processes for its estimated time, no
// process holding two runs at once, sorted by start.
void expect_valid_schedule(const std::vector<Placement>& s, const std::vector<double>& costs, const std::vector<int>& procs) {
  ASSERT_EQ(s.size(), costs.size());
  std::set<std::size_t> seen;
  for (const auto& p : s) {
    seen.insert(p.run);
    EXPECT_EQ(int(p.ranks.size()), procs[p.run]);
    EXPECT_TRUE(std::is_sorted(p.ranks.begin(), p.ranks.end()));
    EXPECT_DOUBLE_EQ(p.end - p.start, costs[p.run] / procs[p.run]);
  }
  EXPECT_EQ(seen.size(), costs.size());
  for (std::size_t a = 0; a < s.size(); ++a) {  // a process holds one run at a time
    for (std::size_t b = a + 1; b < s.size(); ++b) {
      const bool share = std::any_of(s[a].ranks.begin(), s[a].ranks.end(), [&](int r) {
        return std::find(s[b].ranks.begin(), s[b].ranks.end(), r) != s[b].ranks.end();
      });
      if (share) {
        EXPECT_TRUE(s[a].end <= s[b].start || s[b].end <= s[a].start) << a << " " << b;
      }
    }
  }
  EXPECT_TRUE(std::is_sorted(s.begin(), s.end(), [](const Placement& x, const Placement& y) { return x.start < y.start; }));
}

}  // namespace

TEST(Schedule, PlacesEveryRunOnceLargestFirstWithoutOverlapOnAnyProcess) {
  const std::vector<double> costs = {10, 40, 20, 40, 5, 30};
  const std::vector<int> procs = {1, 2, 1, 4, 1, 2};
  expect_valid_schedule(schedule_runs(costs, procs, 4), costs, procs);
}

TEST(Schedule, NestedScheduleTakesEachSizeInAlignedBlocksLargestFirst) {
  const std::vector<double> costs = {10, 40, 20, 40, 5, 30, 8, 8};
  const std::vector<int> procs = {1, 2, 1, 4, 1, 2, 4, 2};
  for (int world : {4, 6, 8}) {
    const auto s = schedule_nested(costs, procs, world);
    expect_valid_schedule(s, costs, procs);
    for (const auto& p : s) {  // within the blocks nested_blocks gives
      const auto blocks = nested_blocks(procs, world, p.ranks.front());
      EXPECT_NE(std::find(blocks.begin(), blocks.end(), Block{p.ranks.front(), procs[p.run]}), blocks.end());
    }
  }
  // On 4 processes: the two 4-process runs first, the larger first, then the
  // 2-process runs on ranks 0-1 and 2-3, then the single ones.
  const auto s = schedule_nested(costs, procs, 4);
  EXPECT_EQ(s[0].run, 3u);
  EXPECT_DOUBLE_EQ(s[0].end, 10);
  EXPECT_EQ(s[1].run, 6u);
  EXPECT_DOUBLE_EQ(s[1].start, 10);
  EXPECT_EQ(s[2].run, 1u);  // 40 on ranks 0,1 from 12
  EXPECT_EQ(s[2].ranks, (std::vector<int>{0, 1}));
  EXPECT_DOUBLE_EQ(s[2].start, 12);
  EXPECT_EQ(s[3].run, 5u);  // 30 on ranks 2,3
  EXPECT_EQ(s[3].ranks, (std::vector<int>{2, 3}));
  EXPECT_TRUE(schedule_nested(costs, {1, 2, 1, 4, 1, 2, 4, 3}, 4).empty());  // 3 does not nest
}

// A round (a seed, a search trial) goes out whole before the next, its
// largest runs first; without rounds, largest first over all.
TEST(Schedule, RunsGoOutRoundByRoundLargestFirstWithinARound) {
  const std::vector<double> costs = {10, 40, 20, 10, 40, 20};
  const std::vector<std::size_t> rounds = {0, 0, 0, 1, 1, 1};
  EXPECT_EQ(take_order(costs, rounds), (std::vector<std::size_t>{1, 2, 0, 4, 5, 3}));
  EXPECT_EQ(take_order(costs, {}), (std::vector<std::size_t>{1, 4, 2, 5, 0, 3}));
  const std::vector<int> procs(costs.size(), 1);
  const auto s = schedule_nested(costs, procs, 1, rounds);
  expect_valid_schedule(s, costs, procs);
  std::vector<std::size_t> order;
  for (const auto& p : s) order.push_back(p.run);
  EXPECT_EQ(order, take_order(costs, rounds));
  // On 2 processes, placed in advance: round 0 fills both before round 1 starts.
  const auto placed = schedule_runs(costs, procs, 2, rounds);
  expect_valid_schedule(placed, costs, procs);
  double round0_start = 0, round1_start = 1e9;
  for (const auto& p : placed) {
    if (rounds[p.run] == 0) round0_start = std::max(round0_start, p.start);
    if (rounds[p.run] == 1) round1_start = std::min(round1_start, p.start);
  }
  EXPECT_LE(round0_start, round1_start);
  EXPECT_THROW(take_order(costs, {0, 1}), std::invalid_argument);  // a round per run, or none
}

TEST(Schedule, DefaultProcessesPerRunIsTheLargestPowerOfTwoDividingWorkers) {
  EXPECT_EQ(default_procs_per_run(8, 64), 8);
  EXPECT_EQ(default_procs_per_run(8, 3), 2);
  EXPECT_EQ(default_procs_per_run(6, 8), 2);
  EXPECT_EQ(default_procs_per_run(1, 8), 1);
  EXPECT_EQ(default_procs_per_run(12, 16), 4);
}

TEST(Schedule, NestedBlocksSplitTheJobBySizeLargestFirst) {
  using B = std::vector<Block>;
  EXPECT_EQ(nested_blocks({1, 4, 2, 4}, 8, 5), (B{{4, 4}, {4, 2}, {5, 1}}));
  EXPECT_EQ(nested_blocks({4, 2}, 6, 1), (B{{0, 4}, {0, 2}}));
  EXPECT_EQ(nested_blocks({4, 2}, 6, 5), (B{{4, 2}}));  // past the last block of 4: starts at 2
  EXPECT_EQ(nested_blocks({4, 2, 1}, 7, 6), (B{{6, 1}}));
  EXPECT_EQ(nested_blocks({2}, 4, 3), (B{{2, 2}}));  // one size: fixed groups, as before
  EXPECT_EQ(nested_blocks({1}, 3, 2), (B{{2, 1}}));
  // Every size must divide the next larger, the smallest the job.
  EXPECT_FALSE(sizes_nest({4, 3}, 12));
  EXPECT_FALSE(sizes_nest({2}, 3));
  EXPECT_FALSE(sizes_nest({8}, 4));
  EXPECT_TRUE(sizes_nest({8, 2, 1, 8}, 12));
  EXPECT_TRUE(nested_blocks({4, 3}, 12, 0).empty());
  // Each rank ends alone, every block lies in the one before it, and every
  // member of a block passes through that same block.
  for (int world : {1, 2, 5, 6, 7, 8, 12, 16}) {
    std::vector<int> sizes;
    for (int size : {8, 4, 2, 1}) {
      if (size <= world) sizes.push_back(size);  // a run never takes more processes than the job has
    }
    for (int rank = 0; rank < world; ++rank) {
      const std::vector<Block> blocks = nested_blocks(sizes, world, rank);
      ASSERT_FALSE(blocks.empty()) << world << " " << rank;
      EXPECT_EQ(blocks.back(), (Block{rank, 1}));
      for (std::size_t j = 0; j < blocks.size(); ++j) {
        const Block& b = blocks[j];
        EXPECT_TRUE(b.first <= rank && rank < b.first + b.size && b.first + b.size <= world);
        if (j > 0) {
          EXPECT_TRUE(blocks[j - 1].first <= b.first && b.first + b.size <= blocks[j - 1].first + blocks[j - 1].size);
        }
        for (int other = b.first; other < b.first + b.size; ++other) {
          const std::vector<Block> theirs = nested_blocks(sizes, world, other);
          EXPECT_NE(std::find(theirs.begin(), theirs.end(), b), theirs.end()) << world << " " << rank << " " << other;
        }
      }
    }
  }
}

TEST(ClaimQueue, QueuesOnOneFolderTakeEachRunOnceInOrder) {
  ScratchDir dir;
  const std::vector<std::string> ids = {"a", "b", "c", "d", "e"};
  ClaimQueue one(dir.str(), ids), two(dir.str(), ids);
  write_claim(dir.str() + "/c.claim", host_name() + " " + std::to_string(::getpid()));  // a live job has c
  EXPECT_EQ(one.next(), 0);
  EXPECT_EQ(two.next(), 1);
  EXPECT_EQ(two.next(), 3);  // c is taken
  EXPECT_EQ(one.next(), 4);  // a and b are behind it, c and d taken
  EXPECT_EQ(one.next(), -1);
  EXPECT_EQ(two.next(), -1);
  one.release(0);  // its result is written
  EXPECT_FALSE(file_exists(dir.str() + "/a.claim"));
  EXPECT_TRUE(file_exists(dir.str() + "/b.claim"));
}

TEST(ClaimQueue, ARunFinishedElsewhereIsSkipped) {
  ScratchDir dir;
  std::set<std::size_t> finished = {1};
  ClaimQueue q(dir.str(), {"a", "b", "c"}, 600, [&](std::size_t i) { return finished.count(i) > 0; });
  EXPECT_EQ(q.next(), 0);
  finished.insert(2);
  EXPECT_EQ(q.next(), -1);
  EXPECT_FALSE(file_exists(dir.str() + "/b.claim"));
  EXPECT_FALSE(file_exists(dir.str() + "/c.claim"));
}

TEST(ClaimQueue, StaleClaimsAreTakenOverAndLiveOnesKept) {
  ScratchDir dir;
  const std::string d = dir.str();
  // A process of this host that is gone (a killed job restarted here): stale at once.
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);
  write_claim(d + "/dead.claim", host_name() + " " + std::to_string(child));
  // Another host's claim: live until it is older than the timeout.
  write_claim(d + "/fresh.claim", "another-host 12345");
  write_claim(d + "/old.claim", "another-host 12345");
  age(d + "/old.claim", 700);
  // This process: live however old, until the timeout.
  write_claim(d + "/mine.claim", host_name() + " " + std::to_string(::getpid()));
  age(d + "/mine.claim", 300);
  EXPECT_TRUE(ClaimQueue::is_stale(d + "/dead.claim", 600));
  EXPECT_FALSE(ClaimQueue::is_stale(d + "/fresh.claim", 600));
  EXPECT_TRUE(ClaimQueue::is_stale(d + "/old.claim", 600));
  EXPECT_FALSE(ClaimQueue::is_stale(d + "/mine.claim", 600));
  EXPECT_TRUE(ClaimQueue::is_stale(d + "/mine.claim", 200));
  EXPECT_FALSE(ClaimQueue::is_stale(d + "/absent.claim", 600));
  // Temporary files carry their writer in the name.
  write_claim(d + "/run.h5." + host_name() + "." + std::to_string(child) + ".tmp", "");
  write_claim(d + "/run.h5." + host_name() + "." + std::to_string(::getpid()) + ".tmp", "");
  write_claim(d + "/run.h5.another-host." + std::to_string(child) + ".tmp", "");
  EXPECT_TRUE(ClaimQueue::is_stale(d + "/run.h5." + host_name() + "." + std::to_string(child) + ".tmp", 600));
  EXPECT_FALSE(ClaimQueue::is_stale(d + "/run.h5." + host_name() + "." + std::to_string(::getpid()) + ".tmp", 600));
  EXPECT_FALSE(ClaimQueue::is_stale(d + "/run.h5.another-host." + std::to_string(child) + ".tmp", 600));

  ClaimQueue q(d, {"fresh", "dead", "old", "mine"}, 600);
  EXPECT_EQ(q.next(), 1);  // taken over
  EXPECT_EQ(q.next(), 2);
  EXPECT_EQ(q.next(), -1);
  std::ifstream in(d + "/dead.claim");
  std::string host;
  long pid = 0;
  in >> host >> pid;
  EXPECT_EQ(pid, long(::getpid()));

  write_claim(d + "/dead2.claim", host_name() + " " + std::to_string(child));
  ClaimQueue::remove_stale_claims(d, 600);
  EXPECT_FALSE(file_exists(d + "/dead2.claim"));
  EXPECT_TRUE(file_exists(d + "/fresh.claim"));
  EXPECT_TRUE(file_exists(d + "/mine.claim"));
}

TEST(ClaimQueue, ARequeuedSlurmJobTakesOverWhatItsEarlierStartHeld) {
  ScratchDir dir;
  const std::string d = dir.str();
  ::setenv("SLURM_JOB_ID", "777", 1);
  ::setenv("SLURM_RESTART_COUNT", "2", 1);
  write_claim(d + "/earlier.claim", "other-node 5 777 1");  // this job before its requeue
  write_claim(d + "/same.claim", "other-node 5 777 2");     // another group of this start
  write_claim(d + "/other.claim", "other-node 5 778 0");    // another job (an array task)
  EXPECT_TRUE(ClaimQueue::is_stale(d + "/earlier.claim", 600));
  EXPECT_FALSE(ClaimQueue::is_stale(d + "/same.claim", 600));
  EXPECT_FALSE(ClaimQueue::is_stale(d + "/other.claim", 600));
  ClaimQueue q(d, {"new"}, 600);
  ASSERT_EQ(q.next(), 0);
  std::ifstream in(d + "/new.claim");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, host_name() + " " + std::to_string(::getpid()) + " 777 2\n");
  ::unsetenv("SLURM_JOB_ID");
  ::unsetenv("SLURM_RESTART_COUNT");
}

TEST(ClaimQueue, AHeartbeatKeepsAClaimLive) {
  ScratchDir dir;
  ClaimQueue q(dir.str(), {"a"}, 600);
  ASSERT_EQ(q.next(), 0);
  age(dir.str() + "/a.claim", 700);
  EXPECT_TRUE(ClaimQueue::is_stale(dir.str() + "/a.claim", 600));
  q.heartbeat(0);
  EXPECT_FALSE(ClaimQueue::is_stale(dir.str() + "/a.claim", 600));
}

TEST(ClaimQueue, WithoutAFolderTakesEveryRunInOrder) {
  ClaimQueue q("", {"a", "b"});
  EXPECT_EQ(q.next(), 0);
  EXPECT_EQ(q.next(), 1);
  EXPECT_EQ(q.next(), -1);
}

TEST(ClaimQueue, AFolderThatCannotBeWrittenIsAnErrorNamingTheFile) {
  ScratchDir dir;
  ClaimQueue q(dir.str() + "/missing", {"a"});
  try {
    q.next();
    FAIL() << "expected a DataError";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("missing/a.claim"), std::string::npos) << e.what();
  }
}

namespace {

// K processes of this host (K jobs) find the same stale claim and all try to
// take its run at once. Each child reports whether it took the run, then stays
// alive until every child has reported: a winner that exited early would leave
// a claim of a dead process, which the others would then rightly take over.
int takers_of_one_stale_claim(const std::string& dir, const std::string& id, int k) {
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ::waitpid(dead, nullptr, 0);
  write_claim(dir + "/" + id + ".claim", host_name() + " " + std::to_string(dead));
  int go[2], done[2], report[2];
  if (::pipe(go) != 0 || ::pipe(done) != 0 || ::pipe(report) != 0) return -1;
  std::vector<pid_t> children;
  for (int c = 0; c < k; ++c) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(go[1]);
      ::close(done[1]);
      char b = 0;
      (void)!::read(go[0], &b, 1);  // returns when the parent closes its end: all start together
      ClaimQueue q(dir, {id}, 600);
      const char took = q.take(0) ? '1' : '0';
      (void)!::write(report[1], &took, 1);
      (void)!::read(done[0], &b, 1);
      ::_exit(0);
    }
    children.push_back(pid);
  }
  ::close(go[0]);
  ::close(go[1]);
  int takers = 0;
  for (int c = 0; c < k; ++c) {
    char took = 0;
    if (::read(report[0], &took, 1) == 1 && took == '1') ++takers;
  }
  ::close(done[1]);
  for (pid_t pid : children) ::waitpid(pid, nullptr, 0);
  for (int fd : {done[0], report[0], report[1]}) ::close(fd);
  return takers;
}

}  // namespace

TEST(ClaimQueue, JobsTakingOverOneStaleClaimAtOnceTrainItOnce) {
  ScratchDir dir;
  for (int round = 0; round < 200; ++round) {
    const std::string id = "run" + std::to_string(round);
    ASSERT_EQ(takers_of_one_stale_claim(dir.str(), id, 6), 1) << "round " << round;
  }
}

TEST(ClaimQueue, ATakeOverLeavesAClaimMadeAfterItLookedInPlace) {
  ScratchDir dir;
  const std::string path = dir.str() + "/run.claim";
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ::waitpid(dead, nullptr, 0);
  write_claim(path, host_name() + " " + std::to_string(dead));
  // Between this job's look and its removal, another job takes the stale claim
  // over and writes its own (a live process of another host).
  const std::string live = "another-host 4242 - 0";
  EXPECT_FALSE(ClaimQueue::take_over(path, 600, [&] {
    ::unlink(path.c_str());
    write_claim(path, live);
  }));
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, live + "\n");
  // Nothing set aside is left behind, and the stale claim itself is taken over.
  write_claim(path, host_name() + " " + std::to_string(dead));
  EXPECT_TRUE(ClaimQueue::take_over(path, 600));
  EXPECT_FALSE(file_exists(path));
  std::size_t left = 0;
  if (DIR* d = ::opendir(dir.str().c_str())) {
    while (const dirent* e = ::readdir(d)) left += e->d_name[0] != '.';
    ::closedir(d);
  }
  EXPECT_EQ(left, 0u);
  // A live claim is not taken over, and an absent one cannot be.
  write_claim(path, live);
  EXPECT_FALSE(ClaimQueue::take_over(path, 600));
  EXPECT_TRUE(file_exists(path));
  EXPECT_FALSE(ClaimQueue::take_over(dir.str() + "/absent.claim", 600));
}

TEST(ClaimQueue, ATakeOverTokenIsHeldWhileItsHolderLives) {
  ScratchDir dir;
  const std::string path = dir.str() + "/run.claim", token = path + ".takeover";
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ::waitpid(dead, nullptr, 0);
  write_claim(path, host_name() + " " + std::to_string(dead));
  // Another job is taking the stale claim over this instant: leave it to that job.
  write_claim(token, "another-host 4242 - 0");
  EXPECT_FALSE(ClaimQueue::take_over(path, 600));
  EXPECT_TRUE(file_exists(path));
  // That job died holding the token: the token is stale too, and the claim taken over.
  write_claim(token, host_name() + " " + std::to_string(dead));
  EXPECT_TRUE(ClaimQueue::take_over(path, 600));
  EXPECT_FALSE(file_exists(path));
  EXPECT_FALSE(file_exists(token));
  // A job's start clears a dead taker's token with the stale claims.
  write_claim(token, host_name() + " " + std::to_string(dead));
  write_claim(dir.str() + "/live.claim.takeover", "another-host 4242 - 0");
  ClaimQueue::remove_stale_claims(dir.str(), 600);
  EXPECT_FALSE(file_exists(token));
  EXPECT_TRUE(file_exists(dir.str() + "/live.claim.takeover"));
}
