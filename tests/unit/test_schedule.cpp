// Placing runs on processes: the static schedule and the claims of dynamic placement.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <set>

#include "dpstudy/error.hpp"
#include "dpstudy/schedule.hpp"
#include "test_support.hpp"

using namespace dpstudy;
using namespace dpstudy::test;

TEST(Schedule, PlacesEveryRunOnceLargestFirstWithoutOverlapOnAnyProcess) {
  const std::vector<double> costs = {10, 40, 20, 40, 5, 30};
  const std::vector<int> procs = {1, 2, 1, 4, 1, 2};
  const auto s = schedule_runs(costs, procs, 4);
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

TEST(Schedule, DefaultProcessesPerRunIsTheLargestPowerOfTwoDividingWorkers) {
  EXPECT_EQ(default_procs_per_run(8, 64), 8);
  EXPECT_EQ(default_procs_per_run(8, 3), 2);
  EXPECT_EQ(default_procs_per_run(6, 8), 2);
  EXPECT_EQ(default_procs_per_run(1, 8), 1);
  EXPECT_EQ(default_procs_per_run(12, 16), 4);
}

TEST(ClaimQueue, QueuesOnOneFolderTakeEachRunOnceInOrder) {
  ScratchDir dir;
  const std::vector<std::string> ids = {"a", "b", "c", "d", "e"};
  ClaimQueue one(dir.str(), ids), two(dir.str(), ids);
  std::ofstream(dir.str() + "/c.claim") << "another job\n";  // taken already
  EXPECT_EQ(one.next(), 0);
  EXPECT_EQ(two.next(), 1);
  EXPECT_EQ(two.next(), 3);  // c is taken
  EXPECT_EQ(one.next(), 4);  // a and b are behind it, c and d taken
  EXPECT_EQ(one.next(), -1);
  EXPECT_EQ(two.next(), -1);

  ClaimQueue::remove_claims(dir.str());
  struct stat st;
  for (const auto& id : ids) EXPECT_NE(stat((dir.str() + "/" + id + ".claim").c_str(), &st), 0) << id;
  ClaimQueue again(dir.str(), ids);
  EXPECT_EQ(again.next(), 0);  // after the removal every run can be taken again
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
