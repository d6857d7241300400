// dpstudy-analyze plot --kind steps and best_lr: the steps-to-result figures,
// a point per batch size from steps.cpp's best trials, beside their references.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "dpstudy/error.hpp"

namespace dpstudy::analyze {

namespace {

// A line's gnuplot colour: its number from 1, or 0 for a figure of one line (gnuplot's first).
struct LineColour {
  std::size_t number = 0;
  std::string of_line() const { return number == 0 ? "" : " lc " + std::to_string(number); }
  std::string of_text() const { return number == 0 ? "" : " tc lt " + std::to_string(number); }
};

// One data block a line of reach_lines, for those with a point to draw (`point`
// writes a group's row, or nothing; `starts_line` for a line's first group):
// its points (column 2) named by the line, then what `add` draws beside them,
// its references, in the line's colour, titled only for the `first` line. An
// error when no line has a point: an empty figure says nothing.
void reach_blocks(const Runs& r, const Options& o, std::ostringstream& data, std::ostringstream& script,
                  const std::function<void(const Reach&, bool starts_line, std::ostringstream&)>& point,
                  const std::function<void(const std::string& index, const LineColour& colour, bool first,
                                           std::vector<std::string>& plots)>& add) {
  const std::vector<Reach> reach = reach_of(r, o);
  const std::vector<ReachLine> lines = reach_lines(reach, o.by);
  std::vector<std::string> plots;
  std::size_t longest = 0;
  int block = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::ostringstream points;
    for (std::size_t k = 0; k < lines[i].points.size(); ++k) point(*lines[i].points[k], k == 0, points);
    if (points.str().empty()) continue;  // no group of this line reached the target
    data << points.str() << "\n\n";
    const std::string index = "datafile index " + std::to_string(block) + " ";
    const LineColour colour{lines.size() == 1 ? 0 : i + 1};
    plots.push_back(index + "using 1:2 with linespoints lw 2 pt 7" + colour.of_line() + " title " +
                    gnuplot_quoted(lines[i].name.empty() ? "best trial" : lines[i].name) + " noenhanced");
    add(index, colour, block == 0, plots);
    ++block;
    longest = std::max(longest, lines[i].name.size());
  }
  if (plots.empty()) {
    throw UsageError("plot --kind " + o.kind + ": no group reached " + o.series + " " + num(o.target) +
                     ", so there is nothing to draw (steps-to-result tabulates the groups)");
  }
  script << "set logscale xy 2\nset xlabel " << gnuplot_quoted(with_unit(o.by[0], metric_unit(r, o.by[0])))
         << " noenhanced\n"
         << key_placement(longest) << "plot ";
  for (std::size_t i = 0; i < plots.size(); ++i) script << (i ? ", \\\n     " : "") << plots[i];
}

}  // namespace

// Steps to the target against the batch, log2-log2: a line per combination of the
// other --by keys (one, "best trial", with a single key), each with its own dashed
// perfect-scaling line from its first reaching group and each step's regime.
void plot_steps(const Runs& r, const Options& o, std::ostringstream& data, std::ostringstream& script) {
  require_batch_key(o);
  double x0 = std::nan(""), s0 = std::nan(""), px = std::nan(""), ps = std::nan("");
  const auto point = [&](const Reach& rc, bool starts_line, std::ostringstream& out) {
    if (starts_line) x0 = s0 = px = ps = std::nan("");
    if (std::isnan(rc.best)) return;
    const double x = std::strtod(rc.key_values[0].c_str(), nullptr);
    if (std::isnan(x0)) x0 = x, s0 = rc.best;
    const std::string label_text = regime(px, ps, x, rc.best);
    out << format_number(x) << " " << format_number(rc.best) << " " << format_number(s0 * x0 / x) << " "
        << (label_text == "-" ? "\"\"" : "\"" + label_text + "\"") << "\n";
    px = x;
    ps = rc.best;
  };
  const auto add = [](const std::string& index, const LineColour& colour, bool first, std::vector<std::string>& plots) {
    plots.push_back(index + "using 1:3 with lines dt 2 lw 2" + colour.of_line() +
                    (first ? " title 'perfect scaling'" : " notitle"));
    plots.push_back(index + "using 1:2:4 with labels noenhanced offset 0,1.2 font ',9'" + colour.of_text() +
                    " notitle");
  };
  script << "set ylabel " << gnuplot_quoted("steps to " + o.series + " " + num(o.target) + " (steps)")
         << " noenhanced\nset title " << plot_title("steps to result", o) << "\n";
  reach_blocks(r, o, data, script, point, add);
}

// The best trial's learning rate against the batch, with the linear and the
// square-root rule from each line's first point.
void plot_best_lr(const Runs& r, const Options& o, std::ostringstream& data, std::ostringstream& script) {
  require_batch_key(o);
  double x0 = std::nan(""), l0 = std::nan("");
  const auto point = [&](const Reach& rc, bool starts_line, std::ostringstream& out) {
    if (starts_line) x0 = l0 = std::nan("");
    if (std::isnan(rc.best_lr)) return;
    const double x = std::strtod(rc.key_values[0].c_str(), nullptr);
    if (std::isnan(x0)) x0 = x, l0 = rc.best_lr;
    out << format_number(x) << " " << format_number(rc.best_lr) << " " << format_number(l0 * x / x0) << " "
        << format_number(l0 * std::sqrt(x / x0)) << "\n";
  };
  const auto add = [](const std::string& index, const LineColour& colour, bool first, std::vector<std::string>& plots) {
    plots.push_back(index + "using 1:3 with lines dt 2 lw 2" + colour.of_line() +
                    (first ? " title 'linear rule'" : " notitle"));
    plots.push_back(index + "using 1:4 with lines dt 3 lw 2" + colour.of_line() +
                    (first ? " title 'square-root rule'" : " notitle"));
  };
  script << "set ylabel 'learning rate of the best trial' noenhanced\nset title " << plot_title("best learning rate", o)
         << "\n";
  reach_blocks(r, o, data, script, point, add);
}

}  // namespace dpstudy::analyze
