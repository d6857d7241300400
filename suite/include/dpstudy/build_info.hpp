// What this build of dpstudy is: version, git commit, compiler, features.
// Recorded in every result file's provenance.
#pragma once

#include <string>
#include <vector>

namespace dpstudy {

struct BuildInfo {
  std::string version;
  std::string git_commit;   // "unknown" when built outside a git checkout
  std::string build_type;
  std::string compiler;
  bool with_mpi = false;
  bool with_cuda = false;
  std::string source_dir;       // where the project's datasets/data is looked for
  std::string install_datadir;  // <prefix>/share/dpstudy
  std::vector<std::string> workloads;  // the workload executables this build makes (dpstudy-<name>)
};

BuildInfo build_info();

}  // namespace dpstudy
