#include "dpstudy/results.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "dpstudy/error.hpp"
#include "dpstudy/fault.hpp"
#include "dpstudy/runtime_info.hpp"

namespace fs = std::filesystem;

namespace dpstudy {
namespace {

void fsync_path(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), directory ? O_RDONLY | O_DIRECTORY : O_RDONLY);
  if (fd < 0) throw DataError(path, std::string("cannot open to sync: ") + std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) throw DataError(path, std::string("cannot sync to disk: ") + std::strerror(err));
}

}  // namespace

void set_attributes(h5::Group& g, const KeyValues& kv) {
  for (const auto& [k, v] : kv) {
    if (const auto* i = std::get_if<std::int64_t>(&v)) {
      g.set(k, *i);
    } else if (const auto* d = std::get_if<double>(&v)) {
      g.set(k, *d);
    } else {
      g.set(k, std::get<std::string>(v));
    }
  }
}

void write_hdf5_atomically(const std::string& path, const std::function<void(h5::Group&)>& fill,
                           const char* kill_name) {
  fail_point(kill_name);  // as a write that failed: nothing under `path` changes
  // Built in memory, then written by us: a full disk is a clean ENOSPC here,
  // and only a complete, synced file is ever renamed to `path`.
  std::vector<char> image;
  {
    h5::File file = h5::File::create_in_memory(path);
    {
      h5::Group root = file.root();
      fill(root);
    }
    image = file.image();
  }
  // One temporary name per process: under MPI several run leaders may rewrite
  // the index at once, on nodes whose process ids can coincide (containers).
  const std::string tmp = path + "." + host_name() + "." + std::to_string(::getpid()) + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw DataError(tmp, std::string("cannot create: ") + std::strerror(errno));
  auto give_up = [&](const std::string& what) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    throw DataError(tmp, what + ": " + std::strerror(err) +
                             (err == ENOSPC ? " (the disk is full; nothing was written under the final name)" : ""));
  };
  auto write_all = [&](std::size_t from, std::size_t to) {
    while (from < to) {
      const ssize_t n = ::write(fd, image.data() + from, std::min<std::size_t>(to - from, 1 << 20));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) give_up("cannot write");
      from += std::size_t(n);
    }
  };
  write_all(0, image.size() / 2);
  kill_point(kill_name);  // a kill in mid-write leaves only the .tmp behind
  write_all(image.size() / 2, image.size());
  if (::fsync(fd) != 0) give_up("cannot sync to disk");
  if (::close(fd) != 0) {
    ::unlink(tmp.c_str());
    throw DataError(tmp, std::string("cannot close: ") + std::strerror(errno));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw DataError(path, std::string("cannot move the finished file into place: ") + std::strerror(err));
  }
  fsync_path(fs::path(path).parent_path().string(), true);
}

void write_series(h5::Group& root, const RunResult& r, int workers) {
  {
    const TrainSeries& t = r.train;
    h5::Group g = root.create_group("train");
    g.write("step", t.step, "step");
    g.write("epoch", t.epoch, "epoch");
    g.write("loss", t.loss, "nats");
    g.write("lr", t.lr, "1");
    g.write("samples", t.samples, "samples");
    g.write("time_s", t.time_s, "s");
    g.write("comm_s", t.comm_s, "s");
    g.write("comm_bytes", t.comm_bytes, "bytes");
    g.write_matrix("worker_loss", t.worker_loss, std::int64_t(t.step.size()), workers, "nats");
  }
  {
    const EvalSeries& e = r.eval;
    h5::Group g = root.create_group("eval");
    g.write("step", e.step, "step");
    g.write("epoch", e.epoch, "epoch");
    g.write("test_loss", e.test_loss, "nats");
    g.write("test_accuracy", e.test_accuracy, "fraction");
    g.write("val_loss", e.val_loss, "nats");
    g.write("val_accuracy", e.val_accuracy, "fraction");
    g.write("train_loss", e.train_loss, "nats");
    g.write("worker_divergence", e.worker_divergence, "L2 norm");
    g.write("synced", e.synced, "1");
  }
  {
    h5::Group g = root.create_group("syncs");
    g.write("step", r.syncs.step, "step");
    g.write("level", r.syncs.level, "1");
    g.write("divergence", r.syncs.divergence, "L2 norm");
  }
  {
    const AssignmentStats& a = r.assignment;
    h5::Group g = root.create_group("assignment");
    g.set("min_shard_size", a.min_size);
    g.set("mean_shard_size", a.mean_size);
    g.set("max_shard_size", a.max_size);
    g.set("covered", a.covered);
    g.set("mean_pairwise_intersection", a.mean_intersection);
    g.set("mean_pairwise_overlap_fraction", a.mean_overlap_fraction);
    // 2: the pool of pool mode is a random sample whatever the order; files
    // without it drew a coarse pool from the start of the order (CHANGELOG.md).
    g.set("scheme", std::int64_t(kAssignmentScheme));
    if (a.classes > 0) {
      g.set("class_skew", a.class_skew);
      g.write_matrix("class_counts", a.class_counts, std::int64_t(a.class_counts.size()) / a.classes, a.classes,
                     "samples");
    }
  }
  {
    h5::Group g = root.create_group("sparsity");
    g.set("overall", r.sparsity.overall);
    for (const auto& [name, fraction] : r.sparsity.per_parameter) g.set(name, fraction);
  }
  {
    const RunSummary& s = r.summary;
    h5::Group g = root.create_group("summary");
    g.set("sparsity_achieved", r.sparsity.overall);
    g.set("status", to_string(s.status));
    g.set("final_test_accuracy", s.final_test_accuracy);
    g.set("best_test_accuracy", s.best_test_accuracy);
    g.set("final_test_loss", s.final_test_loss);
    g.set("final_val_accuracy", s.final_val_accuracy);
    g.set("final_synced_test_accuracy", s.final_synced_test_accuracy);
    g.set("steps", s.steps);
    g.set("steps_per_epoch", s.steps_per_epoch);
    g.set("wall_time_s", s.wall_time_s);
    g.set("samples_per_s", s.samples_per_s);
    g.set("compute_time_s", s.compute_time_s);
    g.set("comm_time_s", s.comm_time_s);
    g.set("eval_time_s", s.eval_time_s);
    g.set("parameters", s.parameters);
    g.set("diverged", std::int64_t(s.status == RunStatus::diverged));
    g.set("steps_to_goal", s.steps_to_goal);
    g.set("time_to_goal_s", s.time_to_goal_s);
    g.set("peak_rss_mib", s.peak_rss_mib);
    g.set("peak_gpu_mib", s.peak_gpu_mib);
  }
}

RunResult read_series(const h5::Group& root) {
  RunResult r;
  {
    const h5::Group g = root.open_group("train");
    TrainSeries& t = r.train;
    t.step = g.read_ints("step");
    t.epoch = g.read_doubles("epoch");
    t.loss = g.read_doubles("loss");
    t.lr = g.read_doubles("lr");
    t.samples = g.read_ints("samples");
    t.time_s = g.read_doubles("time_s");
    t.comm_s = g.read_doubles("comm_s");
    t.comm_bytes = g.read_ints("comm_bytes");
    t.worker_loss = g.read_doubles("worker_loss");
  }
  {
    const h5::Group g = root.open_group("eval");
    EvalSeries& e = r.eval;
    e.step = g.read_ints("step");
    e.epoch = g.read_doubles("epoch");
    e.test_loss = g.read_doubles("test_loss");
    e.test_accuracy = g.read_doubles("test_accuracy");
    e.val_loss = g.read_doubles("val_loss");
    e.val_accuracy = g.read_doubles("val_accuracy");
    e.train_loss = g.read_doubles("train_loss");
    e.worker_divergence = g.read_doubles("worker_divergence");
    if (g.has("synced")) e.synced = g.read_ints("synced");  // empty from a dpstudy before it
  }
  {
    const h5::Group g = root.open_group("syncs");
    r.syncs.step = g.read_ints("step");
    for (auto v : g.read_ints("level")) r.syncs.level.push_back(std::int32_t(v));
    r.syncs.divergence = g.read_doubles("divergence");
  }
  return r;
}

void write_run_file(const std::string& path, const RunRecord& rec) {
  if (rec.result.summary.status == RunStatus::stopped) {
    throw Error(path + ": run " + rec.run_id + " was stopped before its end; its checkpoint holds it, not a run file");
  }
  write_hdf5_atomically(
      path,
      [&](h5::Group& root) {
        root.set("schema", kRunSchema);
        root.set("run_id", rec.run_id);
        root.set("study", rec.study);
        root.set("workload", rec.workload);
        root.set("status", to_string(rec.result.summary.status));
        root.set("started_utc", rec.started_utc);
        root.set("finished_utc", rec.finished_utc);
        {
          h5::Group config = root.create_group("config");
          set_attributes(config, rec.config);
          config.set("study_text", rec.study_text);
        }
        {
          h5::Group prov = root.create_group("provenance");
          set_attributes(prov, rec.provenance);
        }
        write_series(root, rec.result, rec.workers);
      },
      "run-write");
}

namespace {

// Every value the index takes from a run file (study_index.cpp), read as it
// reads them: a file the index would skip is not a complete run to a study
// either, or the study would keep it and the index leave it out.
void read_attributes(const h5::Group& g) {
  for (const std::string& key : g.attr_names()) {
    const char kind = g.attr_kind(key);
    if (kind == 's') {
      g.get_string(key);
    } else if (kind == 'i') {
      g.get_int(key);
    } else {
      g.get_double(key);
    }
  }
}

// The series write_series writes, by group, that every run file of this
// schema has (eval/synced came later: a file may lack it). Each column of a
// group holds one value per row of its step column (worker_loss one row).
struct SeriesGroup {
  const char* name;
  std::vector<const char*> columns;
};
const SeriesGroup kSeriesGroups[] = {
    {"train", {"step", "epoch", "loss", "lr", "samples", "time_s", "comm_s", "comm_bytes", "worker_loss"}},
    {"eval", {"step", "epoch", "test_loss", "test_accuracy", "val_loss", "val_accuracy", "train_loss",
              "worker_divergence"}},
    {"syncs", {"step", "level", "divergence"}},
};

// dpstudy-analyze refuses a run file whose series disagree in length or whose
// values fail their checksum (a damaged or edited file); a study must not keep
// such a file as a finished run.
void check_series(const h5::Group& root, const std::string& path) {
  for (const SeriesGroup& sg : kSeriesGroups) {
    const std::string group = sg.name;
    const h5::Group g = root.open_group(group);
    const std::vector<std::string> members = g.members();
    for (const char* column : sg.columns) {
      if (std::find(members.begin(), members.end(), column) == members.end()) {
        throw Hdf5Error(path, "no " + group + "/" + column + " series");
      }
    }
    const std::vector<std::int64_t> steps = g.dataset_shape("step");
    for (const std::string& column : members) {
      char kind = '?';
      const std::vector<std::int64_t> shape = g.dataset_shape(column, &kind);
      const bool fits = steps.size() == 1 && !shape.empty() && shape[0] == steps[0] &&
                        shape.size() == (column == "worker_loss" ? 2u : 1u);
      if (!fits) {
        throw Hdf5Error(path, group + "/" + column + " has " + h5::shape_text(shape) + " values, " + group +
                                  "/step has " + h5::shape_text(steps) +
                                  ": expected one value per step (a damaged or edited run file)");
      }
      if (kind == 's') throw Hdf5Error(path, group + "/" + column + " holds text, expected numbers");
      g.read_doubles(
          column);  // reading checks the values' checksum (hdf5_integrity.cpp): a damaged value, a damaged file
      g.dataset_units(column);  // and its texts' (dpstudy-analyze reads the units): a damaged unit, too
    }
  }
}

void read_index_values(const h5::Group& root) {
  read_attributes(root);
  read_attributes(root.open_group("config"));
  read_attributes(root.open_group("summary"));
  const h5::Group provenance = root.open_group("provenance");
  for (const char* key : {"dataset_checksums", "libtorch", "blas_build", "cpu_kernels", "gpu", "dpstudy_version",
                          "git_commit", "git_changes"}) {
    if (provenance.has_attr(key)) provenance.get_string(key);
  }
}

}  // namespace

RunFileState inspect_run_file(const std::string& path, std::string* detail, RunFileCheck check) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return RunFileState::missing;
  try {
    const h5::File f = h5::File::open_read(path);
    const h5::Group root = f.root();
    const std::string schema = root.has_attr("schema") ? root.get_string("schema") : "";
    if (schema != kRunSchema) {
      if (detail) *detail = "schema '" + schema + "', this dpstudy reads " + kRunSchema;
      return schema.empty() ? RunFileState::corrupt : RunFileState::other_schema;
    }
    for (const char* g : {"config", "provenance", "train", "eval", "summary"}) {
      if (!root.has(g)) {
        if (detail) *detail = std::string("no /") + g + " group";
        return RunFileState::corrupt;
      }
    }
    // runs/<id>.h5 holds run <id>: a renamed or copied file would be taken for
    // another run's result (and give the index two rows of one run).
    const std::string id = root.get_string("run_id");
    const std::string stem = fs::path(path).stem().string();
    if (id != stem && check != RunFileCheck::reproduce) {
      if (detail) *detail = "holds run " + id + ", not " + stem + " (a renamed or copied run file)";
      return RunFileState::corrupt;
    }
    if (check == RunFileCheck::reproduce) {
      root.open_group("train").read_doubles("loss");
    } else {
      check_series(root, path);
    }
    root.open_group("summary").get_string("status");
    if (check == RunFileCheck::finished) read_index_values(root);
    return RunFileState::complete;
  } catch (const Error& e) {
    if (detail) *detail = e.what();
    return RunFileState::corrupt;
  }
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace dpstudy
