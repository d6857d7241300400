// The checkpoint files of a study's runs in <study>/runs/: <id>.ckpt.h5 for a
// run on one process, <id>.ckpt.r<rank>of<P>.h5 for each process of a run on P.
// A set resumes its run only when all P files are there at one step; what is in
// a file is the trainer's (trainer_checkpoint.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace dpstudy {

class RunCheckpoints {
 public:
  // Lists the folder once, as the study starts: a listing of a 4,000-run folder
  // per run adds up.
  explicit RunCheckpoints(std::string runs_dir);

  // The file of the process of group rank `rank` of a run on `procs` processes.
  std::string path(const std::string& id, int procs, int rank) const;
  // The step of run `id`'s complete set for `procs` processes; nullopt when a
  // file is missing or unreadable, or their steps differ.
  std::optional<std::int64_t> set_step(const std::string& id, int procs) const;
  // Whether the listing had files of run `id`, and the processes per run of
  // their names (a set of another layout, or a partial one, counts).
  bool listed(const std::string& id) const { return files_.count(id) > 0; }
  std::set<int> layouts(const std::string& id) const;
  // Removes run `id`'s files for `procs` processes and any it had listed.
  void remove(const std::string& id, int procs) const;

 private:
  std::string runs_dir_;
  std::map<std::string, std::vector<std::string>> files_;  // by run id
};

}  // namespace dpstudy
