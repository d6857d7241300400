// What this build of dpstudy is: version, git commit, compiler, features.
// Recorded in every result file's provenance.
#pragma once

#include <string>
#include <vector>

namespace dpstudy {

struct BuildInfo {
  std::string version;
  std::string git_commit;   // "unknown" when built outside a git checkout
  // "none", "uncommitted <digest>" (files changed or added since that commit; the digest, 12 hex digits, of
  // their names and contents tells two sets of changes apart; "uncommitted" alone before 2026-12-04), or "unknown"
  std::string git_changes;
  std::string build_type;
  std::string compiler;
  bool with_mpi = false;
  bool with_cuda = false;
  std::string source_dir;       // where the project's datasets/data is looked for
  std::string install_datadir;  // <prefix>/share/dpstudy
  std::vector<std::string> workloads;  // the workload executables this build makes (dpstudy-<name>)
};

BuildInfo build_info();

// The commit's first 12 digits, and "with uncommitted changes <digest>" when there were.
inline std::string commit_line(const BuildInfo& b) {
  const std::string changed = "uncommitted";
  const bool uncommitted = b.git_changes.compare(0, changed.size(), changed) == 0;
  return b.git_commit.substr(0, 12) +
         (uncommitted ? " with uncommitted changes" + b.git_changes.substr(changed.size()) : "");
}
// "dpstudy 0.1.0, commit a1e837d1bbcc[ with uncommitted changes 3fa2c1d0e4b5]".
inline std::string build_line(const BuildInfo& b) { return "dpstudy " + b.version + ", commit " + commit_line(b); }

}  // namespace dpstudy
