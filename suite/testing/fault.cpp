#include "dpstudy/fault.hpp"

#include <unistd.h>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "dpstudy/error.hpp"

namespace dpstudy {

namespace {

// Whether the world rank named by the environment variable `rank_variable`
// (unset: every rank) is this process's.
bool this_rank(const char* rank_variable) {
  const char* want = std::getenv(rank_variable);
  if (!want) return true;
  for (const char* v : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}) {
    if (const char* r = std::getenv(v)) return std::string(r) == want;
  }
  return std::string(want) == "0";
}

int kill_signal() {
  const char* name = std::getenv("DPSTUDY_TEST_KILL_SIGNAL");
  if (!name || !*name) return SIGKILL;
  const std::string n = name;
  if (n == "TERM") return SIGTERM;
  if (n == "INT") return SIGINT;
  if (n == "USR1") return SIGUSR1;
  throw Error("DPSTUDY_TEST_KILL_SIGNAL=" + n + ": expected TERM, INT or USR1");
}

// The hits of each point so far, by the runs a process trains at once too.
long hit(const std::string& name) {
  static std::mutex lock;
  static std::map<std::string, long> hits;
  const std::lock_guard<std::mutex> counting(lock);
  return ++hits[name];
}

}  // namespace

void kill_point(const char* name) {
  static const char* spec = std::getenv("DPSTUDY_TEST_KILL_AT");
  if (!spec || !*spec) return;
  static const bool mine = this_rank("DPSTUDY_TEST_KILL_RANK");
  if (!mine) return;
  const char* colon = std::strrchr(spec, ':');
  if (!colon || std::string(spec, std::size_t(colon - spec)) != name) return;
  if (hit(std::string("kill ") + name) == std::atol(colon + 1)) {
    const int signal = kill_signal();
    std::fprintf(stderr, "DPSTUDY_TEST_KILL_AT: %s this process at %s\n",
                 signal == SIGKILL ? "killing" : "signalling", spec);
    std::fflush(nullptr);
    if (signal == SIGKILL) ::kill(::getpid(), SIGKILL);
    std::raise(signal);  // to this very thread: handled before raise returns
  }
}

void fail_point(const char* name) {
  static const char* spec = std::getenv("DPSTUDY_TEST_FAIL_AT");
  if (!spec || !*spec) return;
  static const bool mine = this_rank("DPSTUDY_TEST_FAIL_RANK");
  if (!mine) return;
  const char* colon = std::strrchr(spec, ':');
  if (!colon || std::string(spec, std::size_t(colon - spec)) != name) return;
  if (hit(std::string("fail ") + name) == std::atol(colon + 1)) {
    throw Error(std::string("injected failure (DPSTUDY_TEST_FAIL_AT=") + spec + ")");
  }
}

}  // namespace dpstudy
