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

// Whether this pass through point `name` is the K-th, when the environment
// variable `spec_variable` is "NAME:K" (and `rank_variable`, if set, names this
// rank). Counted per variable, by the runs a process trains at once too.
bool reached(const char* spec_variable, const char* rank_variable, const char* name) {
  const char* spec = std::getenv(spec_variable);
  if (!spec || !*spec || !this_rank(rank_variable)) return false;
  const char* colon = std::strrchr(spec, ':');
  if (!colon || std::string(spec, std::size_t(colon - spec)) != name) return false;
  static std::mutex lock;
  static std::map<std::string, long> hits;
  const std::lock_guard<std::mutex> counting(lock);
  return ++hits[std::string(spec_variable) + " " + name] == std::atol(colon + 1);
}

}  // namespace

void kill_point(const char* name) {
  if (!reached("DPSTUDY_TEST_KILL_AT", "DPSTUDY_TEST_KILL_RANK", name)) return;
  const int signal = kill_signal();
  std::fprintf(stderr, "DPSTUDY_TEST_KILL_AT: %s this process at %s\n", signal == SIGKILL ? "killing" : "signalling",
               std::getenv("DPSTUDY_TEST_KILL_AT"));
  std::fflush(nullptr);
  if (signal == SIGKILL) ::kill(::getpid(), SIGKILL);
  std::raise(signal);  // to this very thread: handled before raise returns
}

void fail_point(const char* name) {
  if (reached("DPSTUDY_TEST_FAIL_AT", "DPSTUDY_TEST_FAIL_RANK", name)) {
    throw Error(std::string("injected failure (DPSTUDY_TEST_FAIL_AT=") + std::getenv("DPSTUDY_TEST_FAIL_AT") + ")");
  }
}

bool out_of_memory_point(const char* name) { return reached("DPSTUDY_TEST_OOM_AT", "DPSTUDY_TEST_OOM_RANK", name); }

}  // namespace dpstudy
