// Result files (schema dpstudy.run/1, one per run) and the study index
// (dpstudy.index/1), written through the HDF5 layer, always atomically: a file
// with its final name is complete. The schema, column by column: results/README.md.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dpstudy/hdf5.hpp"
#include "dpstudy/metrics.hpp"
#include "dpstudy/run_config.hpp"

namespace dpstudy {

constexpr const char* kRunSchema = "dpstudy.run/1";
constexpr const char* kIndexSchema = "dpstudy.index/1";
constexpr const char* kCheckpointSchema = "dpstudy.checkpoint/1";

struct RunRecord {
  std::string run_id, study, workload, started_utc, finished_utc, study_text;
  KeyValues config;      // the run config and the model's options
  KeyValues provenance;  // versions, host, command line, dataset checksums, ...
  RunResult result;
  int workers = 1;
};

// Writes `path` + ".tmp", fsyncs it, renames it to `path` and fsyncs the folder.
// `fill` writes the content; on any failure the temporary file is removed and the
// error (a full disk says so) propagates. `kill_name` is a fault-injection point
// (fault.hpp) inside the write.
void write_hdf5_atomically(const std::string& path, const std::function<void(h5::Group&)>& fill,
                           const char* kill_name);

void write_run_file(const std::string& path, const RunRecord& record);

// Each key as an attribute of `g`, typed as its value (int64, float64, text).
void set_attributes(h5::Group& g, const KeyValues& kv);

// The recorded series and summary, as in a run file (also used by checkpoints).
void write_series(h5::Group& root, const RunResult& r, int workers);
RunResult read_series(const h5::Group& root);

// Two run files of one config, compared bit for bit (--reproduce): every
// dataset and attribute of train, eval, syncs, assignment, sparsity and
// summary, and the root's status, leaving out what measures time (time_s,
// wall_time_s, samples_per_s, ...); the configs are compared on their own.
struct RunComparison {
  std::size_t compared = 0;                      // datasets and attributes compared
  std::vector<std::string> differences;          // "eval/test_accuracy: ..." per differing item
  std::vector<std::string> config_differences;   // keys whose stored values differ or are missing
  std::vector<std::string> not_in_reference;     // recorded only in the other (a newer dpstudy's additions)
  std::vector<std::string> only_in_reference;    // the reference's groups this dpstudy does not write
};
RunComparison compare_run_files(const std::string& reference, const std::string& other);

enum class RunFileState { missing, complete, corrupt, other_schema };
// How much of a run file inspect_run_file reads.
enum class RunFileCheck {
  finished,   // a study's finished run: named by its id, every series one value per step, every value the index reads
  for_index,  // the same but the values, which the index reads next itself
  reproduce,  // its groups under any name (a copy elsewhere): --reproduce compares the rest and names what differs
};
// What is at `path`; `detail` says why for corrupt and other_schema.
RunFileState inspect_run_file(const std::string& path, std::string* detail,
                              RunFileCheck check = RunFileCheck::finished);

// The run files under <study_dir>/runs (names ending in .h5, checkpoints and
// temporary files left out), sorted: what the index is made from.
std::vector<std::string> run_file_paths(const std::string& study_dir);

// The study index, <study_dir>/index.h5: one row per complete run file under
// <study_dir>/runs. A study rewrites it after every run; the rows read from run
// files are kept here, and a file whose size, modification time and inode are
// unchanged is not opened again, so a study of N runs opens each file once
// rather than N times (N = 4000 in lee2021-simple-cnn; docs/studies.md).
class StudyIndex {
 public:
  StudyIndex(std::string study_dir, std::string study);
  ~StudyIndex();
  StudyIndex(const StudyIndex&) = delete;
  StudyIndex& operator=(const StudyIndex&) = delete;

  // Rewrites index.h5 atomically. Returns the number of runs indexed; corrupt
  // files are skipped and listed in `skipped` (every time, not only when first read).
  std::size_t rebuild(std::vector<std::string>* skipped);
  // Run files opened so far by rebuild(): what the cache saves is testable.
  std::size_t files_read() const { return files_read_; }

 private:
  struct Cache;
  std::string study_dir_, study_;
  std::unique_ptr<Cache> cache_;
  std::size_t files_read_ = 0;
};

// A one-off rebuild (--rebuild_index): StudyIndex(study_dir, study).rebuild(skipped).
std::size_t rebuild_index(const std::string& study_dir, const std::string& study, std::vector<std::string>* skipped);

// Throws UsageError when the folder holds results of another schema version.
void check_results_schema(const std::string& study_dir);

// ISO 8601 UTC, e.g. 2026-11-29T20:05:00Z.
std::string utc_now();

}  // namespace dpstudy
