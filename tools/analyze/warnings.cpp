// The warnings a table carries about the runs it reads: runs of other data
// files, times shared between runs, copies of one run, and runs computed by
// other software stacks, each unless the table is grouped by what differs.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "data.hpp"

namespace dpstudy::analyze {

void warn_of_data_digests(Runs& r, const std::vector<std::string>& grouped_by) {
  if (std::find(grouped_by.begin(), grouped_by.end(), "data_digest") != grouped_by.end()) return;
  std::map<std::string, std::map<std::string, int>> digests;  // dataset -> digest -> runs
  for (const Run& run : r.runs) {
    const std::string digest = run.text("data_digest").value_or("");
    if (!digest.empty()) ++digests[run.text("dataset").value_or("?")][digest];
  }
  for (const auto& [dataset, counts] : digests) {
    if (counts.size() < 2) continue;
    std::string list;
    for (const auto& [digest, n] : counts) {
      list += (list.empty() ? "" : ", ") + digest + ": " + std::to_string(n) + " run(s)";
    }
    r.warnings.push_back("the runs of dataset " + dataset + " were trained on " + std::to_string(counts.size()) +
                         " different sets of its files (data_digest " + list +
                         "); a group that mixes them pools "
                         "runs of different data. Compare by it (--factor data_digest, --by data_digest) or keep one "
                         "(--where data_digest=" +
                         counts.begin()->first + ")");
  }
}

void warn_of_shared_times(Runs& r, const std::vector<std::string>& grouped_by, bool times) {
  if (!times || std::find(grouped_by.begin(), grouped_by.end(), "runs_at_once") != grouped_by.end()) return;
  std::map<double, int> counts;  // runs_at_once -> runs; files older than the column have none
  for (const Run& run : r.runs) {
    const auto it = run.numbers.find("runs_at_once");
    if (it != run.numbers.end() && !std::isnan(it->second)) ++counts[it->second];
  }
  if (counts.size() < 2) return;
  std::string list;
  for (const auto& [n, runs] : counts) {
    list += (list.empty() ? "" : ", ") + std::to_string(int(n)) + ": " + std::to_string(runs) + " run(s)";
  }
  r.warnings.push_back("the runs were trained with different numbers of runs at once in their process (runs_at_once " +
                       list +
                       "): their times measured different shares of the device. Compare times by it (--by "
                       "runs_at_once) or keep one (--where runs_at_once=" +
                       std::to_string(int(counts.begin()->first)) + ")");
}

void warn_of_copies(Runs& r, const std::vector<std::string>& grouped_by) {
  // A group's values of grouped_by and a run id -> the folders holding it.
  std::map<std::pair<std::vector<std::string>, std::string>, std::vector<std::string>> where;
  for (const Run& run : r.runs) {
    std::vector<std::string> group;
    for (const std::string& k : grouped_by) group.push_back(k.empty() ? "" : run.text(k).value_or(""));
    where[{group, run.text("run_id").value_or("")}].push_back(run.text("study_dir").value_or(""));
  }
  std::size_t copied = 0;
  std::string example;
  for (const auto& [key, dirs] : where) {
    if (dirs.size() < 2) continue;
    if (copied++ == 0) example = key.second + " in " + dirs[0] + " and " + dirs[1];
  }
  if (copied == 0) return;
  r.warnings.push_back(std::to_string(copied) + " run(s) are in more than one of the folders read (one run id: the " +
                       "same config and seed), e.g. " + example + ": a group counts each copy as a run of its own, " +
                       "which understates the variance and the p-values. Compare the folders (--factor study_dir, " +
                       "--by study_dir) or read one of them");
}

std::vector<std::string> varying_stack_keys(const Runs& r) {
  std::vector<std::string> out;
  for (const char* key : {"libtorch", "blas_build", "cpu_kernels", "gpu", "dpstudy_build"}) {
    std::set<std::string> values;  // those recorded: files older than a column have none, not another
    for (const Run& run : r.runs) {
      if (const auto v = run.text(key); v && !v->empty()) values.insert(*v);
    }
    if (values.size() > 1) out.push_back(key);
  }
  return out;
}

void warn_of_stacks(Runs& r, const std::vector<std::string>& grouped_by) {
  const std::vector<std::string> varying = varying_stack_keys(r);
  if (varying.empty()) return;
  const auto varies = [&varying](const char* key) {
    return std::find(varying.begin(), varying.end(), key) != varying.end();
  };
  const bool cpu = varies("cpu_kernels"), gpu = varies("gpu"), code = varies("dpstudy_build");
  // The parts of a stack: each one's key and the words before its value.
  std::vector<std::pair<const char*, const char*>> parts = {{"libtorch", "LibTorch "}, {"blas_build", ", "}};
  if (cpu) parts.emplace_back("cpu_kernels", ", ");
  if (gpu) parts.emplace_back("gpu", ", GPU ");
  if (code) parts.emplace_back("dpstudy_build", ", dpstudy ");
  // (LibTorch, BLAS build[, CPU kernels][, GPU][, dpstudy build]) -> runs; "" where a file does not record it.
  std::map<std::vector<std::string>, int> stacks;
  // A group's values of grouped_by and a varying key -> that key's recorded values in the group.
  std::map<std::pair<std::vector<std::string>, std::string>, std::set<std::string>> mixed;
  for (const Run& run : r.runs) {
    std::vector<std::string> stack;
    for (const auto& part : parts) stack.push_back(run.text(part.first).value_or(""));
    ++stacks[stack];
    std::vector<std::string> group;
    for (const std::string& k : grouped_by) group.push_back(k.empty() ? "" : run.text(k).value_or(""));
    for (const std::string& key : varying) {
      if (const auto v = run.text(key); v && !v->empty()) mixed[{group, key}].insert(*v);
    }
  }
  // Two folders of two machines compared by study_dir, say, mix nothing.
  if (std::none_of(mixed.begin(), mixed.end(), [](const auto& g) { return g.second.size() > 1; })) return;
  // A file older than a column is counted as another build only where what it does
  // record matches no build of the files that record it all.
  const auto complete = [](const std::vector<std::string>& s) {
    return std::none_of(s.begin(), s.end(), [](const std::string& v) { return v.empty(); });
  };
  const auto may_be = [](const std::vector<std::string>& partial, const std::vector<std::string>& full) {
    for (std::size_t i = 0; i < partial.size(); ++i) {
      if (!partial[i].empty() && partial[i] != full[i]) return false;
    }
    return true;
  };
  std::size_t builds = 0;
  bool folded = false;
  std::string list;
  for (const auto& [counted, n] : stacks) {
    const std::vector<std::string>& stack = counted;  // a lambda may not name a structured binding before C++20
    const bool known = complete(stack) || std::none_of(stacks.begin(), stacks.end(), [&](const auto& other) {
                         return complete(other.first) && may_be(stack, other.first);
                       });
    builds += known;
    folded = folded || !known;
    std::string name;
    for (std::size_t i = 0; i < stack.size(); ++i) {
      name += parts[i].second + (stack[i].empty() ? std::string("not recorded") : stack[i]);
    }
    list += (list.empty() ? "" : "; ") + name + ": " + std::to_string(n) + " run(s)";
  }
  if (folded) list += "; the runs whose files do not record it all counted with a build they may be";
  const std::string& key = varying.front();
  std::string also;  // "sets of CPU kernels or GPUs"
  if (cpu) also = "sets of CPU kernels";
  if (gpu) also += (also.empty() ? "" : " or ") + std::string("GPUs");
  r.warnings.push_back("the runs read were made with " + std::to_string(builds) +
                       (code ? " builds of LibTorch, the BLAS or dpstudy" : " LibTorch or BLAS builds") +
                       (also.empty() ? " (" : (code ? ", or " : " or ") + also + " (") + list +
                       "): a group that mixes them pools runs that do not reproduce each other bit for bit" +
                       (code ? " (nor train alike, if the code that trains changed)" : "") +
                       " (docs/studies.md#reproducing-a-run). Compare by it (--factor " + key + ", --by " + key +
                       ") or keep one (--where " + key + "=...)");
}

}  // namespace dpstudy::analyze
