// Result files (schema dpstudy.run/1, one per run) and the study index
// (dpstudy.index/1), written through the HDF5 layer, always atomically: a file
// with its final name is complete. The schema, column by column: results/README.md.
#pragma once

#include <functional>
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

// The recorded series and summary, as in a run file (also used by checkpoints).
void write_series(h5::Group& root, const RunResult& r, int workers);
RunResult read_series(const h5::Group& root);

enum class RunFileState { missing, complete, corrupt, other_schema };
// What is at `path`; `detail` says why for corrupt and other_schema.
RunFileState inspect_run_file(const std::string& path, std::string* detail);

// Rebuilds <study_dir>/index.h5 from the run files under <study_dir>/runs.
// Returns the number of runs indexed; corrupt files are skipped and listed in `skipped`.
std::size_t rebuild_index(const std::string& study_dir, const std::string& study, std::vector<std::string>* skipped);

// Throws UsageError when the folder holds results of another schema version.
void check_results_schema(const std::string& study_dir);

// ISO 8601 UTC, e.g. 2026-11-29T20:05:00Z.
std::string utc_now();

}  // namespace dpstudy
