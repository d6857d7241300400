#include "dpstudy/fault.hpp"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <unistd.h>

#include "dpstudy/error.hpp"

namespace dpstudy {

void kill_point(const char* name) {
  static const char* spec = std::getenv("DPSTUDY_TEST_KILL_AT");
  if (!spec || !*spec) return;
  static std::map<std::string, long> hits;
  const char* colon = std::strrchr(spec, ':');
  if (!colon || std::string(spec, std::size_t(colon - spec)) != name) return;
  if (++hits[name] == std::atol(colon + 1)) {
    std::fprintf(stderr, "DPSTUDY_TEST_KILL_AT: killing this process at %s\n", spec);
    std::fflush(nullptr);
    ::kill(::getpid(), SIGKILL);
  }
}

void fail_point(const char* name) {
  static const char* spec = std::getenv("DPSTUDY_TEST_FAIL_AT");
  if (!spec || !*spec) return;
  static const bool this_rank = [] {
    const char* want = std::getenv("DPSTUDY_TEST_FAIL_RANK");
    if (!want) return true;
    for (const char* v : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}) {
      if (const char* r = std::getenv(v)) return std::string(r) == want;
    }
    return std::string(want) == "0";
  }();
  if (!this_rank) return;
  static std::map<std::string, long> hits;
  const char* colon = std::strrchr(spec, ':');
  if (!colon || std::string(spec, std::size_t(colon - spec)) != name) return;
  if (++hits[name] == std::atol(colon + 1)) {
    throw Error(std::string("injected failure (DPSTUDY_TEST_FAIL_AT=") + spec + ")");
  }
}

}  // namespace dpstudy
