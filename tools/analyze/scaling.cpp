// dpstudy-analyze plot --kind scaling: samples/s against workers from the
// throughput tables of --mode throughput, each line beside its linear scaling.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "commands.hpp"
#include "dpstudy/error.hpp"
#include "dpstudy/study.hpp"

namespace fs = std::filesystem;

namespace dpstudy::analyze {

namespace {

// How many values column `k` takes in the points kept (0 where there is no such column).
std::size_t distinct(const SpeedPoints& p, const std::string& k) {
  if (!p.s.columns.count(k)) return 0;
  std::set<std::string> v;
  for (const std::size_t i : p.rows) v.insert(p.s.columns.at(k)[i]);
  return v.size();
}

// The keys whose lines a scaling plot draws when --by names none: those of the points kept
// that take two or more values, less how a point ran; batch_size gives way to the global
// batch where the sweep held that (fewer global batches than batches: strong scaling).
std::vector<std::string> scaling_lines(const SpeedPoints& p) {
  std::vector<std::string> keys;
  for (const std::string& k : p.keys) {
    if (!SpeedPoints::is_how(k) && distinct(p, k) > 1) keys.push_back(k);
  }
  const auto batch = std::find(keys.begin(), keys.end(), "batch_size");
  if (batch != keys.end() && p.s.columns.count(kGlobalBatch) && distinct(p, kGlobalBatch) < distinct(p, "batch_size")) {
    *batch = kGlobalBatch;
  }
  return keys;
}

}  // namespace

namespace {

// One line of the figure: a table's points of one value of the --by keys.
struct Line {
  std::string name;
  std::map<double, std::pair<double, double>> at;  // workers -> samples/s, its sd over repetitions (or NaN)
};

// The lines of every table read, with a note per table (weak or strong
// scaling) and the worker counts measured, for the tics.
std::vector<Line> scaling_lines_of(const Options& o, std::vector<std::string>* notes,
                                   std::map<double, std::string>* levels) {
  std::vector<Line> lines;
  for (const std::string& dir : o.dirs) {
    const SpeedPoints p = speed_points(dir, o.where);
    for (const std::string& k : o.by) {
      if (!p.s.columns.count(k)) {
        throw ConfigError("by", join(o.by, ","), "names '" + k + "', not a column of " + p.path + " (its keys: " +
                                                     join(p.keys, ", ") + ")");
      }
    }
    const std::vector<std::string> keys = o.by.empty() ? scaling_lines(p) : o.by;
    // Several tables in one figure: each line says whose it is, by its study folder.
    const std::string study = fs::path(p.path).parent_path().filename().string();
    const std::string whose = o.dirs.size() > 1 ? study + ": " : "";
    // Which batch a line holds: the global one (strong scaling) or each worker's (weak).
    const auto has = [&keys](const std::string& k) { return std::find(keys.begin(), keys.end(), k) != keys.end(); };
    if (has(kGlobalBatch) || (!has("batch_size") && distinct(p, "batch_size") > 1 && distinct(p, kGlobalBatch) == 1)) {
      notes->push_back(whose + "the global batch (workers x batch_size) held along a line: strong scaling");
    } else if (has("batch_size") || distinct(p, "batch_size") == 1) {
      notes->push_back(whose + "each worker's batch held along a line: weak scaling");
    }
    std::map<std::vector<std::string>, std::size_t> line_of;
    std::map<std::pair<std::size_t, double>, std::size_t> row_at;  // a line's point at a worker count
    for (const std::size_t i : p.rows) {
      std::vector<std::string> values;
      for (const std::string& k : keys) values.push_back(p.s.columns.at(k)[i]);
      auto [it, added] = line_of.emplace(values, lines.size());
      if (added) {
        // One line of a table: named by the batch it holds where that is one (weak scaling).
        std::string name = !keys.empty()                       ? label(keys, values)
                           : distinct(p, "batch_size") == 1 ? "batch_size=" + p.s.columns.at("batch_size")[i]
                                                            : "samples/s";
        if (o.dirs.size() > 1) name = study + ": " + name;
        lines.push_back(Line{name, {}});
      }
      const double workers = p.number("workers", i), rate = p.number("samples_per_s", i);
      const auto [at, fresh] = row_at.emplace(std::pair{it->second, workers}, i);
      if (!fresh) {
        std::vector<std::string> differ;
        const std::size_t earlier = at->second;  // a lambda may not capture a structured binding in C++17
        const auto differs = [&](const std::string& k) { return p.s.columns.at(k)[i] != p.s.columns.at(k)[earlier]; };
        for (const std::string& k : p.keys) {
          // The global batch follows the batch at one worker count: the batch is the key to name.
          if (k != "workers" && differs(k) && !(k == kGlobalBatch && differs("batch_size"))) differ.push_back(k);
        }
        if (differ.empty()) {
          throw DataError(p.path, "holds the point " + p.s.benchmark[i] + " twice (a table written by hand?)");
        }
        throw UsageError(p.path + ": the line '" + lines[it->second].name + "' has two points of workers=" +
                         format_number(workers) + " (they differ in " + join(differ, ", ") + "): give --by " +
                         join(differ, ",") + " for a line each, or keep one with --where " + differ[0] + "=" +
                         p.s.columns.at(differ[0])[at->second]);
      }
      if (!(rate > 0)) continue;  // a log axis has no place for it (no measurement)
      levels->emplace(workers, p.s.columns.at("workers")[i]);
      lines[it->second].at[workers] = {rate, p.spread(i)};
    }
  }
  return lines;
}

}  // namespace

std::vector<std::string> plot_scaling(const Options& o) {
  if (o.output.empty()) throw UsageError("plot needs --output FILE.png, FILE.svg or FILE.gp");
  const std::string term = terminal_for(o.output);
  if (std::find(o.by.begin(), o.by.end(), "workers") != o.by.end()) {
    throw ConfigError("by", join(o.by, ","),
                      "names workers, the x axis of plot --kind scaling: --by names the keys "
                      "whose values each get a line (e.g. batch_size, sync_period)");
  }
  std::vector<std::string> notes;  // per table: weak or strong scaling
  std::map<double, std::string> levels;
  bool cut = false;
  std::vector<Line> lines = scaling_lines_of(o, &notes, &levels);
  std::ostringstream data, script;
  std::vector<std::string> plots;
  bool bars = false;  // repetitions were made for some point: bars for all
  for (const Line& line : lines) {
    for (const auto& [w, rate_sd] : line.at) bars = bars || !std::isnan(rate_sd.second);
  }
  std::size_t longest_title = 0, block = 0;  // block: the line's data block in the file
  for (const Line& line : lines) {
    if (line.at.empty()) continue;
    const auto [w0, first] = *line.at.begin();
    for (const auto& [w, rate_sd] : line.at) {
      const auto [rate, sd] = rate_sd;
      double lo = rate, hi = rate;
      if (!std::isnan(sd)) {
        lo = rate - sd, hi = rate + sd;
        if (lo <= 0) lo = rate / 100, cut = true;  // a log axis ends above 0
      }
      data << format_number(w) << " " << format_number(rate) << " " << format_number(lo) << " " << format_number(hi)
           << " " << format_number(first.first * w / w0) << "\n";
    }
    data << "\n\n";
    const std::string index = "datafile index " + std::to_string(block) + " ";
    const std::string colour = " lc " + std::to_string(++block);
    longest_title = std::max(longest_title, line.name.size());
    plots.push_back(index + (bars ? "using 1:2:3:4 with yerrorlines" : "using 1:2 with linespoints") + " lw 2 pt 7" +
                    colour + " title " + gnuplot_quoted(line.name));
    plots.push_back(index + "using 1:5 with lines dt 2 lw 1" + colour + " notitle");
  }
  if (block == 0) throw UsageError("plot --kind scaling: no point kept has a measured samples/s above 0");
  // The key's entry for every line's dashed reference, in no line's colour.
  plots.push_back("NaN with lines dt 2 lw 1 lc rgb 'gray30' title 'linear scaling (dashed)'");
  script << "set terminal " << term << "\nset grid\nset key outside right top noenhanced\n"
         << "set logscale x 2\nset logscale y 10\nset xlabel 'workers' noenhanced\n"
         << "set ylabel 'throughput (samples/s)' noenhanced\nset format y '%.0f'\nset title "
         << plot_title(std::string("throughput against workers") +
                           (bars ? ": mean and +/- 1 standard deviation over repetitions" : ""),
                       o)
         << "\nset offsets graph 0.05, graph 0.05, 0, 0\n";
  if (levels.size() <= 12) {
    script << "set xtics (";
    for (auto it = levels.begin(); it != levels.end(); ++it) script << (it == levels.begin() ? "" : ", ") << it->second;
    script << ")\n";
  }
  script << key_placement(longest_title) << "plot ";
  for (std::size_t i = 0; i < plots.size(); ++i) script << (i ? ", \\\n     " : "") << plots[i];
  script << "\n";
  run_gnuplot(script.str(), data.str(), o.output);
  std::printf("wrote %s\n", o.output.c_str());
  notes.push_back("dashed: linear scaling from each line's point of fewest workers; the speed-up and efficiency of "
                  "each point: dpstudy-analyze throughput");
  if (cut) notes.push_back("a bar reaching 0 or below is cut at 1 % of its mean (a logarithmic axis)");
  return notes;
}

}  // namespace dpstudy::analyze
