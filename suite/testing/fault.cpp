#include "dpstudy/fault.hpp"

#include <unistd.h>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

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

// The signals to raise in turn: SIGKILL alone when unset. Two, such as INT,INT,
// are a second Ctrl-C arriving while the first stop is under way.
std::vector<int> kill_signals() {
  const char* names = std::getenv("DPSTUDY_TEST_KILL_SIGNAL");
  if (!names || !*names) return {SIGKILL};
  std::vector<int> signals;
  std::stringstream list(names);
  for (std::string n; std::getline(list, n, ',');) {
    if (n == "TERM") {
      signals.push_back(SIGTERM);
    } else if (n == "INT") {
      signals.push_back(SIGINT);
    } else if (n == "USR1") {
      signals.push_back(SIGUSR1);
    } else {
      throw Error(std::string("DPSTUDY_TEST_KILL_SIGNAL=") + names + ": expected TERM, INT or USR1, or several " +
                  "separated by commas, not '" + n + "'");
    }
  }
  return signals;
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
  const std::vector<int> signals = kill_signals();
  std::fprintf(stderr, "DPSTUDY_TEST_KILL_AT: %s this process at %s\n",
               signals[0] == SIGKILL ? "killing" : "signalling", spec);
  std::fflush(nullptr);
  if (signals[0] == SIGKILL) ::kill(::getpid(), SIGKILL);
  // To this very thread: each is handled before raise returns, so none merges
  // into another still pending, as two sent from outside might.
  for (const int signal : signals) std::raise(signal);
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

bool torch_error_point(const char* name) {
  static const char* spec = std::getenv("DPSTUDY_TEST_TORCH_ERROR_AT");
  if (!spec || !*spec) return false;
  static const bool mine = this_rank("DPSTUDY_TEST_TORCH_ERROR_RANK");
  return mine && reached(spec, "DPSTUDY_TEST_TORCH_ERROR_AT", name);
}

}  // namespace dpstudy
