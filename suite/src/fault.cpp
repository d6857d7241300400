#include "dpstudy/fault.hpp"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <unistd.h>

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

}  // namespace dpstudy
