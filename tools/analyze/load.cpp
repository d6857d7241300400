// Reading study folders: the index's rows as runs, which columns are run keys,
// and where the index and the run files beside it disagree.
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <utility>

#include "commands.hpp"  // shell_word
#include "data.hpp"
#include "dpstudy/error.hpp"
#include "dpstudy/hdf5.hpp"
#include "dpstudy/results.hpp"
#include "dpstudy/study.hpp"

namespace fs = std::filesystem;

namespace dpstudy::analyze {
namespace {

std::string listed(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < 3; ++i) out += (i ? ", " : "") + names[i];
  return names.size() > 3 ? out + ", ..." : out;
}

// stat(2), not std::filesystem::equivalent: a program may call only the filesystem functions
// the workloads call (tests/e2e/filesystem_imports.sh, docs/gpu.md).
bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {}, sb {};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

// The workload's command that indexes a study's run files: named by its folder, not by the
// study name the files hold (a copied or renamed folder holds another study's name).
std::string rebuild_command(const std::string& dir, const std::string& workload) {
  std::string folder = dir;  // "results/quickstart/" names the study too
  while (folder.size() > 1 && folder.back() == '/') folder.pop_back();
  const std::string base = fs::path(folder).filename().string();
  if (base == "." || base == "..") {  // "." names no study: the folder's own name does
    if (char* real = ::realpath(folder.c_str(), nullptr)) {
      folder = real;
      std::free(real);
    }
  }
  const std::string parent = fs::path(folder).parent_path().string();
  return "dpstudy-" + (workload.empty() ? std::string("WORKLOAD") : workload) + " --output " +
         shell_word(parent.empty() ? "." : parent) + " --name " +
         shell_word(fs::path(folder).filename().string()) + " --rebuild_index";
}

// A folder given without an index.h5, told by what it holds: a results root (--output)
// given for one of its studies, a study whose first run has not finished, run files
// whose index was removed.
[[noreturn]] void no_index(const std::string& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) throw UsageError(dir + ": no such folder (a study's results are in <output>/<study>/)");
  if (!fs::is_directory(dir, ec)) {
    if (fs::path(dir).filename() == "index.h5") {
      const std::string parent = fs::path(dir).parent_path().string();
      throw UsageError(dir + ": the study's index; give the study folder that holds it, " +
                       (parent.empty() ? std::string(".") : parent));
    }
    throw UsageError(dir + ": a file, not a study folder; give the folder holding index.h5 and runs/");
  }
  std::vector<std::string> studies;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (fs::is_regular_file(entry.path() / "index.h5", ec)) studies.push_back(entry.path().filename().string());
  }
  std::sort(studies.begin(), studies.end());
  if (!studies.empty()) {
    throw UsageError(dir + ": a results folder holding " + std::to_string(studies.size()) + " stud" +
                     (studies.size() == 1 ? "y" : "ies") + " (" + listed(studies) + "), not a study; give " +
                     (studies.size() == 1 ? "it" : "one or several of them") + ", e.g. " +
                     (fs::path(dir) / studies.front()).string());
  }
  if (fs::is_directory(fs::path(dir) / "runs", ec)) {
    std::string workload;
    std::size_t complete = 0;
    for (const std::string& path : run_file_paths(dir)) {
      if (inspect_run_file(path, nullptr) != RunFileState::complete) continue;
      if (complete++ == 0) workload = h5::File::open_read(path).root().get_string("workload");
    }
    if (complete > 0) {
      throw UsageError(dir + ": " + std::to_string(complete) + " complete run file(s) in runs/ but no index.h5 " +
                       "(removed?); index them with `" + rebuild_command(dir, workload) + "`");
    }
    std::size_t claims = 0, checkpoints = 0;
    for (const auto& entry : fs::directory_iterator(fs::path(dir) / "runs", ec)) {
      const std::string name = entry.path().filename().string();
      claims += name.size() > 6 && name.compare(name.size() - 6, 6, ".claim") == 0;
      checkpoints += name.find(".ckpt.") != std::string::npos;
    }
    throw UsageError(dir + ": no run of this study has finished yet (runs/ holds " + std::to_string(claims) +
                     " run(s) being trained and " + std::to_string(checkpoints) +
                     " checkpoint file(s)); it is indexed, and can be analysed, once one has");
  }
  if (fs::is_regular_file(fs::path(dir) / "throughput.h5", ec)) {  // --mode throughput trains no run
    const std::string table = (fs::path(dir) / "throughput.h5").string();
    throw UsageError(dir + ": holds the throughput table of --mode throughput (" + table + ") but no trained run " +
                     "(no index.h5): `dpstudy-analyze throughput " + shell_word(dir) + "` tabulates it, and " +
                     "steps-to-result reads it beside a trained study (--throughput " + shell_word(table) + ")");
  }
  // tools/dpstudy-slurm writes its batch script into the study's folder before the job
  // starts, and Slurm its output beside it: a study submitted, not yet trained.
  std::size_t slurm_outputs = 0, entries = 0;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {  // (not fs::is_empty: filesystem_imports)
    const std::string name = entry.path().filename().string();
    ++entries;
    slurm_outputs +=
        name.size() > 10 && name.compare(0, 6, "slurm-") == 0 && name.compare(name.size() - 4, 4, ".out") == 0;
  }
  const bool script = fs::is_regular_file(fs::path(dir) / "slurm.sbatch", ec);
  if (script || slurm_outputs > 0) {
    throw UsageError(dir + ": no run of this study has started yet (no runs/, no index.h5); it holds " +
                     (script ? std::string("tools/dpstudy-slurm's batch script slurm.sbatch") : std::string()) +
                     (script && slurm_outputs > 0 ? " and " : "") +
                     (slurm_outputs > 0 ? std::to_string(slurm_outputs) + " Slurm job output(s) slurm-*.out" : "") +
                     ": the job is waiting in the queue, or ended before training (its slurm-*.out says why)");
  }
  if (entries == 0) {
    throw UsageError(dir +
                     ": an empty folder, not a study (no index.h5); a study's results are in "
                     "<output>/<study>/, holding index.h5 and runs/ (the quick start's: results/quickstart)");
  }
  throw UsageError(dir +
                   ": not a study folder (no index.h5); a study's results are in <output>/<study>/, "
                   "holding index.h5 and runs/ (the quick start's: results/quickstart)");
}

// The runs read are the index's rows. A study stopped between writing a run's file and
// indexing it (a full disk, a kill), or a run file deleted since, makes the two disagree:
// say so, and how to index the files, rather than leave runs out silently.
void check_run_files(const std::string& dir, const std::string& index,
                     const std::map<std::string, std::vector<std::string>>& texts, std::vector<std::string>& warnings) {
  const std::vector<std::string>& ids = texts.at("run_id");
  const std::set<std::string> indexed(ids.begin(), ids.end());
  std::set<std::string> on_disk;
  std::vector<std::string> complete, corrupt;
  for (const std::string& path : run_file_paths(dir)) {
    const std::string id = fs::path(path).stem().string();
    on_disk.insert(id);
    if (indexed.count(id)) continue;
    std::string why;
    const std::string name = fs::path(path).filename().string();
    (inspect_run_file(path, &why) == RunFileState::complete ? complete : corrupt).push_back(name);
  }
  if (!complete.empty()) {
    const auto workload = texts.find("workload");
    const bool known = workload != texts.end() && !workload->second.empty();
    warnings.push_back(dir + ": " + std::to_string(complete.size()) + " complete run file(s) in runs/ not in " +
                       "index.h5 (" + listed(complete) + "), left out here: a study stopped between writing them " +
                       "and indexing them (a full disk, a kill), or one is writing them now. Index them with `" +
                       rebuild_command(dir, known ? workload->second.front() : "") +
                       "`, or by running the study again (it skips finished runs)");
  }
  if (!corrupt.empty()) {
    warnings.push_back(dir + ": " + std::to_string(corrupt.size()) + " run file(s) in runs/ not readable as results (" +
                       listed(corrupt) + "), left out as the index leaves them out (its study trains such a run "
                       "again)");
  }
  std::vector<std::string> missing;
  for (const std::string& id : ids) {
    if (!on_disk.count(id)) missing.push_back(id + ".h5");
  }
  if (!missing.empty()) {
    warnings.push_back(index + ": " + std::to_string(missing.size()) + " indexed run(s) without a file in runs/ (" +
                       listed(missing) + "): removed since the study indexed them; their rows are read, their "
                       "series cannot be. Running the study again (or --rebuild_index) drops the rows");
  }
}

// The samples of one step over all workers (workers x the per-worker batch_size): the batch
// size of Shallue et al.'s steps-to-result curves, and of the linear scaling rule, when
// workers are swept too. Derived here, not a run key (the index has no such column).
void add_global_batch(Runs& r) {
  const auto at = std::find(r.columns.begin(), r.columns.end(), "batch_size");
  if (at == r.columns.end() || std::find(r.columns.begin(), r.columns.end(), "workers") == r.columns.end() ||
      std::find(r.columns.begin(), r.columns.end(), kGlobalBatch) != r.columns.end()) {
    return;
  }
  r.columns.insert(at + 1, kGlobalBatch);
  r.units[kGlobalBatch] = "samples";
  for (Run& run : r.runs) {
    const auto w = run.numbers.find("workers"), b = run.numbers.find("batch_size");
    if (w != run.numbers.end() && b != run.numbers.end()) run.numbers[kGlobalBatch] = w->second * b->second;
  }
}

}  // namespace

Runs load_studies(const std::vector<std::string>& dirs) {
  if (dirs.empty()) throw UsageError("give at least one study folder (e.g. results/quickstart)");
  Runs r;
  for (std::size_t d = 0; d < dirs.size(); ++d) {
    const std::string& dir = dirs[d];
    const std::string index = (fs::path(dir) / "index.h5").string();
    std::error_code ec;
    if (!fs::exists(index, ec)) no_index(dir);
    for (std::size_t e = 0; e < d; ++e) {  // "results/a results/a/": every run would count twice
      if (same_file(dirs[e], dir)) {
        throw UsageError(dir + ": given twice (also as " + dirs[e] + "); each of its runs would count twice");
      }
    }
    const h5::File f = h5::File::open_read(index);
    const h5::Group root = f.root();
    if (!root.has_attr("schema") || root.get_string("schema") != kIndexSchema) {
      throw UsageError(index + ": not a " + std::string(kIndexSchema) + " index");
    }
    const h5::Group idx = root.open_group("index");
    const auto names = idx.members();
    std::size_t n = 0;
    std::string first;  // the column n comes from
    std::map<std::string, std::vector<double>> nums;
    std::map<std::string, std::vector<std::string>> texts;
    for (const auto& name : names) {
      std::size_t rows = 0;
      if (idx.dataset_kind(name) == 's') {
        texts[name] = idx.read_strings(name);
        rows = texts[name].size();
      } else {
        nums[name] = idx.read_doubles(name);
        rows = nums[name].size();
      }
      // One row per run in every column; a damaged or edited index is not read past.
      if (first.empty()) {
        first = name;
        n = rows;
      } else if (rows != n) {
        throw Error(index + ": column '" + name + "' has " + std::to_string(rows) + " rows, '" + first + "' " +
                    std::to_string(n) + ": expected one row per run (a damaged or edited index; running the "
                    "study again rebuilds it from the run files, skipping the finished runs)");
      }
      if (std::find(r.columns.begin(), r.columns.end(), name) == r.columns.end()) r.columns.push_back(name);
      if (!r.units.count(name)) {
        if (std::string u = idx.dataset_units(name); !u.empty()) r.units[name] = u;
      }
    }
    if (names.empty()) {  // no run has finished yet (a run's row is written when it ends)
      r.warnings.push_back(index + ": lists no finished run yet (--dry_run on the study shows those running)");
      texts["run_id"];  // none: the files beside it are still checked
      check_run_files(dir, index, texts, r.warnings);
      continue;
    }
    if (!texts.count("run_id")) {
      throw Error(index + ": no run_id column (a damaged or edited index; running the study again rebuilds it)");
    }
    // Which study and folder a run comes from: the keys to compare studies by
    // (two folders may hold studies of one name: results made on two machines).
    const std::string study = root.has_attr("study") ? root.get_string("study") : fs::path(dir).filename().string();
    for (const char* k : {"study", "study_dir"}) {
      if (std::find(r.columns.begin(), r.columns.end(), k) == r.columns.end()) r.columns.push_back(k);
    }
    // Which columns are run keys, from one run file's /config (the index does not say);
    // the workload too: one study folder may hold runs of several (its workload key lists them).
    if (texts.count("workload")) r.config_keys.insert("workload");
    for (const std::string& id : texts["run_id"]) {
      try {
        const h5::File rf = h5::File::open_read((fs::path(dir) / "runs" / (id + ".h5")).string());
        for (const std::string& k : rf.root().open_group("config").attr_names()) {
          if (k != "study_text") r.config_keys.insert(k);
        }
        break;
      } catch (const Error&) {
        // unreadable: try the next one
      }
    }
    check_run_files(dir, index, texts, r.warnings);
    for (std::size_t i = 0; i < n; ++i) {
      Run run;
      for (const auto& [k, v] : nums) run.numbers[k] = v[i];
      for (const auto& [k, v] : texts) run.texts[k] = v[i];
      run.texts.emplace("study", study);
      run.texts.emplace("study_dir", dir);
      run.file = (fs::path(dir) / "runs" / (run.texts["run_id"] + ".h5")).string();
      r.runs.push_back(std::move(run));
    }
  }
  add_global_batch(r);
  return r;
}

}  // namespace dpstudy::analyze
