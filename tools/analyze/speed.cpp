// dpstudy-analyze's reading of throughput mode's tables (<study>/throughput.h5,
// docs/performance.md): steps/s for steps-to-result, and the throughput command's
// table of each point with its speed-up over one worker.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include "commands.hpp"
#include "dpstudy/build_info.hpp"
#include "dpstudy/error.hpp"
#include "dpstudy/hdf5.hpp"
#include "dpstudy/study.hpp"

namespace fs = std::filesystem;

namespace dpstudy::analyze {

Speed read_speed(const std::string& path) {
  const h5::File f = h5::File::open_read(path);
  if (!f.root().has("throughput")) throw DataError(path, "no /throughput group (it is written by --mode throughput)");
  const h5::Group t = f.root().open_group("throughput");
  Speed s;
  s.benchmark = t.read_strings("benchmark");
  s.steps_per_s = t.read_doubles("steps_per_s");
  s.run_type = t.read_strings("run_type");
  s.aggregate = t.read_strings("aggregate");
  if (f.root().has("provenance")) {  // since 2026-12-03
    const h5::Group p = f.root().open_group("provenance");
    const auto text = [&p](const char* key) { return p.has_attr(key) ? p.get_string(key) : std::string("-"); };
    const auto count = [&p](const char* key) { return p.has_attr(key) ? std::to_string(p.get_int(key)) : "?"; };
    BuildInfo b;
    b.version = text("dpstudy_version");
    b.git_commit = text("git_commit");
    b.git_changes = text("git_changes");
    const std::string gpu = text("gpu"), cpu = text("cpu_kernels");
    s.measured_with = count("processes") + " process(es) x " + count("threads") + " thread(s) on " + text("hosts") +
                      "; LibTorch " + text("libtorch") + "; " + text("blas_build") + (cpu == "-" ? "" : "; " + cpu) +
                      (gpu == "none" || gpu == "-" ? "" : "; GPU " + gpu) + "; " + build_line(b);
  }
  for (const std::string& name : t.members()) {
    std::vector<std::string> text;
    const char kind = t.dataset_kind(name);
    if (kind == 's') {
      text = t.read_strings(name);
    } else if (kind == 'i') {
      for (const auto v : t.read_ints(name)) text.push_back(std::to_string(v));
    } else {
      for (const auto v : t.read_doubles(name)) text.push_back(num(v, 17));
    }
    // One row per reported run in every column: a damaged or edited table is not read past.
    if (const std::size_t rows = s.benchmark.size(); text.size() != rows) {
      throw DataError(path, "column 'throughput/" + name + "' has " + std::to_string(text.size()) +
                                " rows, 'benchmark' " + std::to_string(rows) +
                                ": expected one row per reported run (a damaged or edited table; --mode "
                                "throughput writes it anew)");
    }
    s.columns[name] = std::move(text);
  }
  // The index's derived column (load.cpp), so that groups by it find their point too.
  const auto w = s.columns.find("workers"), b = s.columns.find("batch_size");
  if (w != s.columns.end() && b != s.columns.end() && !s.columns.count(kGlobalBatch)) {
    std::vector<std::string>& text = s.columns[kGlobalBatch];
    for (std::size_t i = 0; i < w->second.size(); ++i) {
      text.push_back(num(std::strtod(w->second[i].c_str(), nullptr) * std::strtod(b->second[i].c_str(), nullptr), 17));
    }
  }
  return s;
}

namespace {

// The table's measurements and Google Benchmark's bookkeeping: every other column is a key
// of the sweep point (workers, batch_size, sync_period, procs, device, parallel, sparsity, ...).
const std::set<std::string> kNotKeys = {"benchmark",     "run_type",          "aggregate",       "repetition",
                                        "iterations",    "time_per_period_s", "samples_per_s",   "steps_per_s",
                                        "comm_fraction", "alg_bytes_per_s",   "bus_bytes_per_s", "peak_rss_mib"};
// How a point ran, not what it trained: a 1-worker point runs on 1 process, one operation at
// a time, and is still the baseline of a 4-worker point on 4 processes.
const std::set<std::string> kHow = {"workers", "procs", "parallel", "cuda_graphs", kGlobalBatch};

}  // namespace

SpeedPoints speed_points(const std::string& dir, const std::vector<std::string>& where_texts) {
  SpeedPoints p;
  std::error_code ec;
  p.path = fs::is_directory(dir, ec) ? (fs::path(dir) / "throughput.h5").string() : dir;
  if (!fs::is_regular_file(p.path, ec)) {
    throw UsageError(p.path + ": no such file; --mode throughput writes <output>/<study>/throughput.h5, and "
                              "throughput reads that folder or the file");
  }
  p.s = read_speed(p.path);
  const Speed& s = p.s;
  for (const char* k :
       {"workers", "batch_size", kGlobalBatch, "sync_period", "procs", "device", "parallel", "cuda_graphs"}) {
    if (s.columns.count(k)) p.keys.push_back(k);
  }
  for (const auto& [name, values] : s.columns) {
    if (!kNotKeys.count(name) && std::find(p.keys.begin(), p.keys.end(), name) == p.keys.end()) p.keys.push_back(name);
  }
  if (!s.columns.count("workers") || !s.columns.count("batch_size") || !s.columns.count("samples_per_s")) {
    throw DataError(p.path, "/throughput has no workers, batch_size or samples_per_s column (not a table of "
                            "--mode throughput?)");
  }
  std::vector<Comparison> where;
  for (const std::string& w : where_texts) {
    where.push_back(parse_comparison(w, "where", w));
    if (!s.columns.count(where.back().key)) {
      throw ConfigError("where", w, "names '" + where.back().key + "', not a column of " + p.path + " (its keys: " +
                                        join(p.keys, ", ") + ")");
    }
  }
  // Each point once: the mean of its repetitions where they were made, else its one measurement.
  p.means = std::find(s.aggregate.begin(), s.aggregate.end(), "mean") != s.aggregate.end();
  for (std::size_t i = 0; i < s.benchmark.size(); ++i) {
    if (s.aggregate[i] == "stddev") p.stddev_rows[s.benchmark[i]] = i;
  }
  for (std::size_t i = 0; i < s.benchmark.size(); ++i) {
    if (p.means ? s.aggregate[i] != "mean" : s.run_type[i] != "iteration") continue;
    p.points.push_back(i);
    const auto kept = [&](const Comparison& c) { return holds(c, s.columns.at(c.key)[i]); };
    if (std::all_of(where.begin(), where.end(), kept)) p.rows.push_back(i);
  }
  if (p.rows.empty()) throw UsageError(p.path + ": no point " + (where.empty() ? "measured" : "kept by --where"));
  return p;
}

double SpeedPoints::number(const std::string& column, std::size_t i) const {
  const auto c = s.columns.find(column);
  return c == s.columns.end() ? std::nan("") : std::strtod(c->second[i].c_str(), nullptr);
}

double SpeedPoints::spread(std::size_t i) const {
  if (!means) return std::nan("");
  const std::string& name = s.benchmark[i];
  if (name.size() < 5 || name.compare(name.size() - 5, 5, "_mean") != 0) return std::nan("");
  const auto row = stddev_rows.find(name.substr(0, name.size() - 5) + "_stddev");
  return row == stddev_rows.end() ? std::nan("") : number("samples_per_s", row->second);
}

bool SpeedPoints::is_how(const std::string& key) { return kHow.count(key) > 0; }

std::vector<std::string> with_speed_table(const std::vector<std::string>& dirs) {
  std::vector<std::string> found;
  for (const std::string& dir : dirs) {
    std::error_code ec;
    if (fs::is_regular_file(fs::path(dir) / "throughput.h5", ec)) found.push_back(dir);
  }
  return found;
}

std::vector<Table> throughput(const Options& o) {
  std::vector<Table> tables;
  for (const std::string& dir : o.dirs) {
    const SpeedPoints p = speed_points(dir, o.where);
    const Speed& s = p.s;
    const std::vector<std::string>& keys = p.keys;
    // The 1-worker point of `batch` samples a step with point i's other keys (--where may have left
    // it out): each worker's batch for weak scaling, the global batch for strong scaling.
    const auto speedup_over = [&](std::size_t i, double batch) {
      for (const std::size_t j : p.points) {
        if (p.number("workers", j) != 1 || p.number("batch_size", j) != batch) continue;
        const bool same = std::all_of(keys.begin(), keys.end(), [&](const std::string& k) {
          return kHow.count(k) || k == "batch_size" || s.columns.at(k)[j] == s.columns.at(k)[i];
        });
        if (same) return p.number("samples_per_s", i) / p.number("samples_per_s", j);
      }
      return std::nan("");
    };
    std::vector<double> weak, strong;
    bool show_strong = false;  // where a point of several workers has its strong baseline
    for (const std::size_t i : p.rows) {
      const double workers = p.number("workers", i), batch = p.number("batch_size", i);
      weak.push_back(speedup_over(i, batch));
      strong.push_back(speedup_over(i, workers * batch));
      show_strong = show_strong || (workers > 1 && !std::isnan(strong.back()));
    }
    Table t;
    t.title = "throughput of each sweep point (" + p.path + ")";
    t.headers = keys;
    for (const char* h : {"samples/s", "steps/s", "comm (fraction)", "peak RSS (MiB)", "speed-up (x)",
                          "efficiency (fraction)"}) {
      t.headers.push_back(h);
    }
    if (show_strong) t.headers.insert(t.headers.end(), {"strong speed-up (x)", "strong efficiency (fraction)"});
    const auto cell = [](double v, int digits) { return std::isnan(v) ? std::string("-") : num(v, digits); };
    for (std::size_t r = 0; r < p.rows.size(); ++r) {
      const std::size_t i = p.rows[r];
      const double workers = p.number("workers", i);
      std::vector<std::string> row;
      for (const std::string& k : keys) row.push_back(s.columns.at(k)[i]);
      for (const std::string& c : {cell(p.number("samples_per_s", i), 6), cell(p.number("steps_per_s", i), 6),
                                   cell(p.number("comm_fraction", i), 3), cell(p.number("peak_rss_mib", i), 4),
                                   cell(weak[r], 3), cell(weak[r] / workers, 3)}) {
        row.push_back(c);
      }
      if (show_strong) row.insert(row.end(), {cell(strong[r], 3), cell(strong[r] / workers, 3)});
      t.rows.push_back(std::move(row));
    }
    t.notes.push_back("speed-up: samples/s over those of the point with 1 worker, the same batch_size and the same "
                      "other keys (each worker's batch held: weak scaling); efficiency = speed-up / workers; - where "
                      "no such point was measured");
    if (show_strong) {
      t.notes.push_back("strong speed-up: over the point with 1 worker whose batch_size is this point's global batch "
                        "(workers x batch_size held: strong scaling; samples/s and steps/s give one ratio)");
    }
    if (p.means) t.notes.push_back("each point: the mean of its repetitions (Google Benchmark's aggregate)");
    t.notes.push_back("measured with: " + (s.measured_with.empty() ? std::string("not recorded (a table from before "
                                                                                 "2026-12-03)")
                                                                   : s.measured_with));
    tables.push_back(std::move(t));
  }
  return tables;
}

}  // namespace dpstudy::analyze
