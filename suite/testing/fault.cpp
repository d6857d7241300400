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

// Whether this pass through point `name` is the K-th, when `spec` (the value
// of the environment variable `variable`, read once by the caller: the points
// are passed every step) is "NAME:K". Counted per variable, by the runs a
// process trains at once too.
bool reached(const char* spec, const char* variable, const char* name) {
  const char* colon = std::strrchr(spec, ':');
  if (!colon || std::string(spec, std::size_t(colon - spec)) != name) return false;
  static std::mutex lock;
  static std::map<std::string, long> hits;
  const std::lock_guard<std::mutex> counting(lock);
  return ++hits[std::string(variable) + " " + name] == std::atol(colon + 1);
}

}  // namespace

void kill_point(const char* name) {
  static const char* spec = std::getenv("DPSTUDY_TEST_KILL_AT");
  if (!spec || !*spec) return;
  static const bool mine = this_rank("DPSTUDY_TEST_KILL_RANK");
  if (!mine || !reached(spec, "DPSTUDY_TEST_KILL_AT", name)) return;
  const int signal = kill_signal();
  std::fprintf(stderr, "DPSTUDY_TEST_KILL_AT: %s this process at %s\n", signal == SIGKILL ? "killing" : "signalling",
               spec);
  std::fflush(nullptr);
  if (signal == SIGKILL) ::kill(::getpid(), SIGKILL);
  std::raise(signal);  // to this very thread: handled before raise returns
}

void fail_point(const char* name) {
  static const char* spec = std::getenv("DPSTUDY_TEST_FAIL_AT");
  if (!spec || !*spec) return;
  static const bool mine = this_rank("DPSTUDY_TEST_FAIL_RANK");
  if (mine && reached(spec, "DPSTUDY_TEST_FAIL_AT", name)) {
    throw Error(std::string("injected failure (DPSTUDY_TEST_FAIL_AT=") + spec + ")");
  }
}

bool out_of_memory_point(const char* name) {
  static const char* spec = std::getenv("DPSTUDY_TEST_OOM_AT");
  if (!spec || !*spec) return false;
  static const bool mine = this_rank("DPSTUDY_TEST_OOM_RANK");
  return mine && reached(spec, "DPSTUDY_TEST_OOM_AT", name);
}

}  // namespace dpstudy
