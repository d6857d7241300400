// The study index (index.h5): one row per run file, rebuilt atomically from
// the run files, reading again only those that changed since the last rebuild.
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "dpstudy/build_info.hpp"
#include "dpstudy/error.hpp"
#include "dpstudy/file_io.hpp"
#include "dpstudy/results.hpp"

namespace fs = std::filesystem;

namespace dpstudy {

namespace {

// One attribute of a run file, as the index stores it.
struct Cell {
  std::string key;
  char kind = 'f';  // 'i', 'f', 's'
  std::int64_t i = 0;
  double d = 0;
  std::string s;
};

void read_cells(const h5::Group& g, const std::vector<std::string>& keys, std::vector<Cell>* out) {
  for (const auto& key : keys) {
    Cell c;
    c.key = key;
    c.kind = g.attr_kind(key);
    if (c.kind == 's') {
      c.s = g.get_string(key);
    } else if (c.kind == 'i') {
      c.i = g.get_int(key);
    } else {
      c.d = g.get_double(key);
    }
    out->push_back(std::move(c));
  }
}

// The assignment's scheme (1 for files from before it was recorded), the skew it
// achieved, and its shards' class counts as text ("12,0,3;0,9,4": one row per
// shard owner), so that pandas and dpstudy-analyze can group runs by the skew.
void add_assignment_cells(const h5::Group& root, std::vector<Cell>* out) {
  if (!root.has("assignment")) return;
  const h5::Group g = root.open_group("assignment");
  out->push_back(Cell{"assignment_scheme", 'i', g.has_attr("scheme") ? g.get_int("scheme") : 1, 0, ""});
  if (g.has_attr("class_skew")) out->push_back(Cell{"class_skew", 'f', 0, g.get_double("class_skew"), ""});
  if (g.has("class_counts")) {
    const std::vector<std::int64_t> dims = g.dataset_shape("class_counts");
    const std::vector<std::int64_t> counts = g.read_ints("class_counts");
    std::string text;
    const std::int64_t cols = dims.size() == 2 ? dims[1] : std::int64_t(counts.size());
    for (std::size_t i = 0; i < counts.size(); ++i) {
      if (i > 0) text += (std::int64_t(i) % cols == 0) ? ";" : ",";
      text += std::to_string(counts[i]);
    }
    out->push_back(Cell{"shard_class_counts", 's', 0, 0, text});
  }
}

std::vector<std::string> attr_names_except(const h5::Group& g, const char* except) {
  std::vector<std::string> names = g.attr_names();
  names.erase(std::remove(names.begin(), names.end(), except), names.end());
  return names;
}

struct Column {
  char kind = 'f';  // 'i', 'f', 's'
  std::vector<std::int64_t> ints;
  std::vector<double> doubles;
  std::vector<std::string> strings;
  std::string unit;
};

std::string unit_of(const std::string& key) {
  static const std::map<std::string, std::string> units = {{"final_test_accuracy", "fraction"},
                                                           {"best_test_accuracy", "fraction"},
                                                           {"final_val_accuracy", "fraction"},
                                                           {"final_synced_test_accuracy", "fraction"},
                                                           {"final_test_loss", "nats"},
                                                           {"wall_time_s", "s"},
                                                           {"samples_per_s", "samples/s"},
                                                           {"compute_time_s", "s"},
                                                           {"comm_time_s", "s"},
                                                           {"eval_time_s", "s"},
                                                           {"steps", "step"},
                                                           {"steps_per_epoch", "step"},
                                                           {"batch_size", "samples"},
                                                           {"epochs", "epoch"},
                                                           {"max_steps", "step"},
                                                           {"warmup_epochs", "epoch"},
                                                           {"sync_period", "step"},
                                                           {"group_sync_period", "step"},
                                                           {"eval_every", "step"},
                                                           {"eval_growth", "fraction"},
                                                           {"block_size", "samples"},
                                                           {"test_every", "step"},
                                                           {"steps_to_goal", "step"},
                                                           {"time_to_goal_s", "s"},
                                                           {"overlap", "fraction"},
                                                           {"validation_fraction", "fraction"},
                                                           {"goal_error", "fraction"},
                                                           {"sparsity", "fraction"},
                                                           {"sparsity_achieved", "fraction"},
                                                           {"parameters", "count"},
                                                           {"lr_decay_steps", "step"},
                                                           {"local_sgd_from_epoch", "epoch"},
                                                           {"peak_rss_mib", "MiB"},
                                                           {"peak_gpu_mib", "MiB"},
                                                           {"class_skew", "fraction"},
                                                           {"shard_class_counts", "samples"}};
  const auto it = units.find(key);
  return it == units.end() ? "" : it->second;
}

// What the run's provenance adds to its row: its data files, what decides its
// bits besides the config, the code, and how many runs shared its process.
void add_provenance_cells(const h5::Group& root, std::vector<Cell>* out) {
  // Which data files the run was trained on, in one short column: runs of one
  // dataset with different digests were trained on different copies of it.
  const h5::Group provenance = root.open_group("provenance");
  if (provenance.has_attr("dataset_checksums")) {
    const std::string checksums = provenance.get_string("dataset_checksums");
    out->push_back(Cell{"data_digest", 's', 0, 0, data_digest(checksums)});
  }
  // What decides the bits besides the config (docs/studies.md#reproducing-a-run).
  for (const char* key : {"libtorch", "blas_build", "cpu_kernels", "gpu", "cuda_graphs"}) {
    if (provenance.has_attr(key)) out->push_back(Cell{key, 's', 0, 0, provenance.get_string(key)});
  }
  // How many runs shared the process, which its times measured: a float
  // column, NaN for files older than it.
  if (provenance.has_attr("runs_at_once")) {
    out->push_back(Cell{"runs_at_once", 'f', 0, double(provenance.get_int("runs_at_once")), ""});
  }
  // And the code: its version and commit, with uncommitted changes or not (files from
  // before git_changes name the commit alone, as a clean build's would).
  if (provenance.has_attr("dpstudy_version") && provenance.has_attr("git_commit")) {
    BuildInfo b;
    b.version = provenance.get_string("dpstudy_version");
    b.git_commit = provenance.get_string("git_commit");
    if (provenance.has_attr("git_changes")) b.git_changes = provenance.get_string("git_changes");
    out->push_back(Cell{"dpstudy_build", 's', 0, 0, b.version + " " + commit_line(b)});
  }
}

// An integer column as floats: a row it lacks is then NaN, not 0, which would
// read as a value (trial 0 for a run outside a search).
void widen(Column& c) {
  for (auto v : c.ints) c.doubles.push_back(double(v));
  c.ints.clear();
  c.kind = 'f';
}

// Adds `cell` as row `row` of its column, padding earlier rows. A column takes
// the kind of its first cell; integers meeting a float or a string, or a row
// without a value, widen to floats (that row NaN), and a string column prints
// numbers.
void add_cell(std::map<std::string, Column>& cols, std::vector<std::string>& order, const Cell& cell,
              std::size_t row) {
  auto [it, fresh] = cols.try_emplace(cell.key);
  Column& c = it->second;
  if (fresh) {
    c.kind = cell.kind;
    c.unit = unit_of(cell.key);
    order.push_back(cell.key);
  }
  if (c.kind == 'i' && (cell.kind != 'i' || c.ints.size() < row)) widen(c);
  const double number = cell.kind == 'i' ? double(cell.i) : cell.d;
  if (c.kind == 's') {
    c.strings.resize(row, "");
    c.strings.push_back(cell.kind == 's' ? cell.s : std::to_string(number));
  } else if (c.kind == 'i') {
    c.ints.push_back(cell.i);  // every earlier row has its value (else widened above)
  } else {
    c.doubles.resize(row, std::nan(""));
    c.doubles.push_back(cell.kind == 's' ? std::nan("") : number);
  }
}

// What identifies one version of a file: an atomic rewrite (tmp + rename) has a
// new inode, an edit in place a new modification time or size.
struct Fingerprint {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  std::int64_t mtime_ns = 0;
  bool operator==(const Fingerprint& o) const {
    return dev == o.dev && ino == o.ino && size == o.size && mtime_ns == o.mtime_ns;
  }
};

bool fingerprint_of(const std::string& path, Fingerprint* fp) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  fp->dev = st.st_dev;
  fp->ino = st.st_ino;
  fp->size = st.st_size;
  fp->mtime_ns = std::int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return true;
}

}  // namespace

struct StudyIndex::Cache {
  struct Entry {
    Fingerprint fp;
    bool complete = false;
    std::string why;          // when not complete
    std::string id;
    std::vector<Cell> cells;  // run_id, status, workload, config (less study_text), summary (less status)
  };
  std::map<std::string, Entry> files;  // by path
};

std::vector<std::string> run_file_paths(const std::string& study_dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(fs::path(study_dir) / "runs", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > 3 && name.compare(name.size() - 3, 3, ".h5") == 0 && name.find(".ckpt.") == std::string::npos) {
      files.push_back(entry.path().string());
    }
  }
  std::sort(files.begin(), files.end());  // by run id: the same index whatever the order runs finished in
  return files;
}

StudyIndex::StudyIndex(std::string study_dir, std::string study)
    : study_dir_(std::move(study_dir)), study_(std::move(study)), cache_(std::make_unique<Cache>()) {}

StudyIndex::~StudyIndex() = default;

std::size_t StudyIndex::rebuild(std::vector<std::string>* skipped) {
  const std::vector<std::string> files = run_file_paths(study_dir_);

  std::map<std::string, Cache::Entry> seen;  // this listing's files only: deleted ones drop out
  for (const auto& path : files) {
    Fingerprint fp;
    if (!fingerprint_of(path, &fp)) continue;  // removed since the listing
    auto cached = cache_->files.find(path);
    if (cached != cache_->files.end() && cached->second.fp == fp) {
      seen.emplace(path, std::move(cached->second));
      continue;
    }
    Cache::Entry e;
    e.fp = fp;
    ++files_read_;
    e.complete = inspect_run_file(path, &e.why, RunFileCheck::for_index) == RunFileState::complete;
    if (e.complete) {
      try {
        const h5::File f = h5::File::open_read(path);
        const h5::Group root = f.root();
        read_cells(root, {"run_id", "status", "workload"}, &e.cells);
        const h5::Group config = root.open_group("config");
        read_cells(config, attr_names_except(config, "study_text"), &e.cells);
        const h5::Group summary = root.open_group("summary");
        read_cells(summary, attr_names_except(summary, "status"), &e.cells);
        add_assignment_cells(root, &e.cells);
        add_provenance_cells(root, &e.cells);
        e.id = root.get_string("run_id");
      } catch (const Error& err) {
        e.complete = false;
        e.why = err.what();
        e.cells.clear();
      }
    }
    seen.emplace(path, std::move(e));
  }
  cache_->files = std::move(seen);

  std::map<std::string, Column> cols;
  std::vector<std::string> order;
  std::vector<std::string> ids;
  for (const auto& [path, e] : cache_->files) {  // a std::map: sorted by path, as `files`
    if (!e.complete) {
      if (skipped) skipped->push_back(path + ": " + e.why);
      continue;
    }
    for (const Cell& c : e.cells) add_cell(cols, order, c, ids.size());
    ids.push_back(e.id);
  }
  const std::size_t n = ids.size();
  write_hdf5_atomically(
      (fs::path(study_dir_) / "index.h5").string(),
      [&](h5::Group& root) {
        root.set("schema", kIndexSchema);
        root.set("study", study_);
        root.set("runs", std::int64_t(n));
        root.set("updated_utc", utc_now());
        h5::Group index = root.create_group("index");
        for (const auto& key : order) {
          Column& c = cols[key];
          if (c.kind == 's') {
            c.strings.resize(n, "");
            index.write(key, c.strings, c.unit);
          } else if (c.kind == 'i' && c.ints.size() == n) {
            index.write(key, c.ints, c.unit);
          } else {
            if (c.kind == 'i') widen(c);
            c.doubles.resize(n, std::nan(""));
            index.write(key, c.doubles, c.unit);
          }
        }
        h5::Group links = root.create_group("runs");
        for (const auto& id : ids) links.link_external(id, "runs/" + id + ".h5", "/");
      },
      "index-write");
  return n;
}

std::size_t rebuild_index(const std::string& study_dir, const std::string& study, std::vector<std::string>* skipped) {
  std::error_code ec;
  if (!fs::is_directory(fs::path(study_dir) / "runs", ec)) {  // it named the index's temporary file
    throw UsageError(study_dir + ": no study to index here (no runs/ folder): give the --output and --name (or "
                     "--study) the study was run with");
  }
  return StudyIndex(study_dir, study).rebuild(skipped);
}

void check_results_schema(const std::string& study_dir) {
  const fs::path index = fs::path(study_dir) / "index.h5";
  std::error_code ec;
  if (fs::exists(index, ec)) {
    std::string schema;
    try {
      const h5::File f = h5::File::open_read(index.string());
      const h5::Group root = f.root();
      schema = root.has_attr("schema") ? root.get_string("schema") : "";
    } catch (const Error&) {
      return;  // a corrupt index is rebuilt, not a reason to stop
    }
    if (schema != kIndexSchema) {
      throw UsageError(index.string() + ": results of schema '" + schema + "', this dpstudy writes " +
                       kIndexSchema + "; choose another --output or study name");
    }
  }
  for (const std::string& p : run_file_paths(study_dir)) {
    std::string why;
    if (inspect_run_file(p, &why) == RunFileState::other_schema) {
      throw UsageError(p + ": " + why + "; choose another --output or study name");
    }
  }
}

}  // namespace dpstudy
