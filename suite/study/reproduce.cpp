// --reproduce: a run file's stored config read back as a one-run study, and
// the verdict comparing the run trained again with it. A stored key that is no
// option of this workload (a file of another dpstudy version) cannot be reproduced.
#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "dpstudy/build_info.hpp"
#include "dpstudy/error.hpp"
#include "dpstudy/file_io.hpp"
#include "dpstudy/hdf5.hpp"
#include "dpstudy/results.hpp"
#include "job.hpp"

namespace dpstudy {

StoredRun read_stored_run(const std::string& path, const std::string& workload, const std::vector<std::string>& keys) {
  std::string detail;
  const RunFileState state = inspect_run_file(path, &detail, RunFileCheck::reproduce);
  if (state == RunFileState::missing) throw UsageError("--reproduce: " + path + ": no such run file");
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw UsageError("--reproduce: " + path + " is a folder; give one run file of a study, " +
                     "<output>/<study>/runs/<run id>.h5");
  }
  if (state != RunFileState::complete) {
    throw UsageError("--reproduce: " + path + " is not a complete run file (" + detail + ")");
  }
  const h5::File f = h5::File::open_read(path);
  const h5::Group root = f.root();
  const std::string theirs = root.get_string("workload");
  if (theirs != workload) {
    throw UsageError("--reproduce: " + path + " is a run of the " + theirs + " workload; reproduce it with dpstudy-" +
                     theirs);
  }
  StoredRun out;
  out.run_id = root.get_string("run_id");
  const h5::Group config = root.open_group("config");
  for (const std::string& k : config.attr_names()) {
    if (k == "study_text") {
      out.study_text = config.get_string(k);
    } else if (k == "trial") {
      out.trial = config.get_int(k);
    } else if (std::find(keys.begin(), keys.end(), k) == keys.end()) {
      throw UsageError("--reproduce: " + path + ": its config key '" + k +
                       "' is no option of this dpstudy (the file comes from another version), so the run cannot be "
                       "reproduced here");
    } else if (config.attr_kind(k) == 's') {
      // An empty list (no lr_milestones) is every workload's default; a study cannot spell it.
      if (!config.get_string(k).empty()) out.values.emplace_back(k, config.get_string(k));
    } else if (config.attr_kind(k) == 'i') {
      const std::int64_t v = config.get_int(k);
      const bool period = k == "sync_period" || k == "group_sync_period";
      out.values.emplace_back(k, period && v == kNever ? "never"
                                 : k == "seed"         ? std::to_string(std::uint64_t(v))
                                                       : std::to_string(v));
    } else {
      out.values.emplace_back(k, to_text(ConfigValue(config.get_double(k))));
    }
  }
  for (const std::string& k : keys) {
    if (!config.has_attr(k)) out.absent.push_back(k);
  }
  // A beaten trial ended where another had reached the goal: its reproduction ends there too.
  const h5::Group summary = root.open_group("summary");
  if (summary.has_attr("status") && summary.attr_kind("status") == 's' && summary.get_string("status") == "beaten" &&
      summary.has_attr("steps") && summary.attr_kind("steps") == 'i') {
    out.beaten_at = summary.get_int("steps");
  }
  const h5::Group prov = root.open_group("provenance");
  if (prov.has_attr("threads") && prov.attr_kind("threads") == 'i') out.threads = prov.get_int("threads");
  if (prov.has_attr("parallel") && prov.attr_kind("parallel") == 's') out.parallel = prov.get_string("parallel");
  if (prov.has_attr("device") && prov.attr_kind("device") == 's') out.device = prov.get_string("device");
  if (prov.has_attr("gpu") && prov.attr_kind("gpu") == 's') out.gpu = prov.get_string("gpu");
  return out;
}

// A reproduction computes where its reference did: a CPU run reproduced on a GPU
// node with --device auto would take the GPU, whose kernels give other bits
// (found on an H200, where every CPU run of the reproduction tests was DIFFERENT).
std::string reference_device(const std::string& path, const StoredRun& stored) {
  if (stored.device.empty()) return "auto";
  if (stored.device.rfind("cuda", 0) != 0) return "cpu";
  if (!build_info().with_cuda) {
    throw UsageError(no_gpu_for_reference(path, stored, "this dpstudy was built with DPSTUDY_WITH_CUDA=OFF"));
  }
  return "cuda";
}

std::string no_gpu_for_reference(const std::string& path, const StoredRun& stored, const std::string& why) {
  return "--reproduce: " + path + ": the run trained on a GPU (" + stored.device +
         (stored.gpu.empty() ? "" : ", " + stored.gpu) + ") and " + why +
         ": give --device cpu to train it again on the CPU, knowing that the CPU's bits differ (DIFFERENT)";
}

namespace {

// A run file's provenance item as text ("-" when it has none).
std::string provenance_item(const std::string& path, const std::string& key) {
  const h5::File f = h5::File::open_read(path);
  const h5::Group prov = f.root().open_group("provenance");
  if (!prov.has_attr(key)) return "-";
  switch (prov.attr_kind(key)) {
    case 's': return prov.get_string(key);
    case 'i': return std::to_string(prov.get_int(key));
    default: return to_text(ConfigValue(prov.get_double(key)));
  }
}

}  // namespace

int report_reproduction(const std::string& reference, const StoredRun& stored, const std::string& id,
                        const std::string& runs_dir) {
  const std::string mine = runs_dir + "/" + id + ".h5";
  if (id != stored.run_id) {
    std::printf("# note: this dpstudy gives the stored config the run id %s, the file says %s (ids were computed "
                "differently by the version that wrote it); the comparison below still holds\n",
                id.c_str(), stored.run_id.c_str());
  }
  {
    KeyValues config;
    for (const auto& [k, v] : stored.values) config.emplace_back(k, v);
    const h5::File f = h5::File::open_read(reference);
    const h5::Group root = f.root();
    const bool scheme_1 = root.has("assignment") && !root.open_group("assignment").has_attr("scheme");
    if (scheme_1 && pool_drawn_anew(config)) {
      std::printf("# note: the run file is of assignment scheme 1, whose coarse pool was the start of the order; "
                  "this dpstudy draws the pool at random (scheme 2), so its shards and bits differ "
                  "(CHANGELOG.md)\n");
    }
  }
  for (const std::string& k : stored.absent) {
    std::printf("# note: the run file has no value for %s (an option newer than the file): the default was used\n",
                k.c_str());
  }
  // Where each ran: what explains a difference, if there is one.
  std::printf("# provenance: reference -> reproduced\n");
  for (const char* k : {"dpstudy_version", "git_commit", "git_changes", "libtorch", "blas", "blas_build", "cpu_kernels",
                        "mpi_library", "hostname", "hosts", "processes", "threads", "parallel", "runs_at_once",
                        "cuda_graphs", "device", "gpu", "gpu_driver", "deterministic"}) {
    const std::string a = provenance_item(reference, k), b = provenance_item(mine, k);
    std::printf("  %-16s  %s\n", k, (a == b ? "same: " + a : a + " -> " + b).c_str());
  }
  const std::string data_then = provenance_item(reference, "dataset_checksums");
  const std::string data_differ = checksum_differences(data_then, provenance_item(mine, "dataset_checksums"));
  std::printf("  %-16s  %s\n", "data",
              data_then == "-" ? "not recorded in the reference"
              : data_differ.empty() ? "same files (sha256)"
                                    : ("other files: " + data_differ).c_str());
  RunComparison c = compare_run_files(reference, mine);
  const auto not_compared = [](const std::vector<std::string>& items, const char* why) {
    if (items.empty()) return;
    std::string list;
    for (const std::string& n : items) list += (list.empty() ? "" : ", ") + n;
    std::printf("# not compared, %s: %s\n", why, list.c_str());
  };
  not_compared(c.not_in_reference, "recorded only by the newer dpstudy");
  not_compared(c.only_in_reference, "recorded only in the reference (by another dpstudy version; this one does not "
                                    "record them)");
  for (const std::string& d : c.config_differences) {
    const bool newer = std::any_of(stored.absent.begin(), stored.absent.end(),
                                   [&](const std::string& k) { return d.rfind("config@" + k + ":", 0) == 0; });
    if (!newer) c.differences.push_back(d);  // the run was not trained as stored: not a reproduction
  }
  if (c.differences.empty()) {
    std::printf("# reproduce: identical: all %zu metric datasets and attributes of run %s agree bit for bit (%s)\n",
                c.compared, stored.run_id.c_str(), mine.c_str());
    return 0;
  }
  std::printf("# reproduce: DIFFERENT: %zu of %zu metric datasets and attributes differ (%s against %s):\n",
              c.differences.size(), c.compared, mine.c_str(), reference.c_str());
  for (std::size_t i = 0; i < c.differences.size() && i < 20; ++i) std::printf("#   %s\n", c.differences[i].c_str());
  if (c.differences.size() > 20) std::printf("#   ... and %zu more\n", c.differences.size() - 20);
  return 4;
}

}  // namespace dpstudy
