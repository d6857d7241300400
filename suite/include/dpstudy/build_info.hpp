// What this build of dpstudy is: version, git commit, compiler, features.
// Recorded in every result file's provenance.
#pragma once

#include <string>
#include <vector>

namespace dpstudy {

struct BuildInfo {
  std::string version;
  std::string git_commit;   // "unknown" when built outside a git checkout
  std::string git_changes;  // "none", "uncommitted" (files changed or added since that commit), or "unknown"
  std::string build_type;
  std::string compiler;
  bool with_mpi = false;
  bool with_cuda = false;
  std::string source_dir;       // where the project's datasets/data is looked for
  std::string install_datadir;  // <prefix>/share/dpstudy
  std::vector<std::string> workloads;  // the workload executables this build makes (dpstudy-<name>)
};

BuildInfo build_info();

// The commit's first 12 digits, and "with uncommitted changes" when there were.
inline std::string commit_line(const BuildInfo& b) {
  return b.git_commit.substr(0, 12) + (b.git_changes == "uncommitted" ? " with uncommitted changes" : "");
}
// "dpstudy 0.1.0, commit a1e837d1bbcc[ with uncommitted changes]".
inline std::string build_line(const BuildInfo& b) { return "dpstudy " + b.version + ", commit " + commit_line(b); }

}  // namespace dpstudy
