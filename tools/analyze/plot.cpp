// dpstudy-analyze plot: the summary, curves and reach figures through gnuplot,
// and the choice of kind (steps and best_lr: plot_steps.cpp; scaling: scaling.cpp).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "commands.hpp"
#include "dpstudy/error.hpp"
#include "dpstudy/stats.hpp"

namespace dpstudy::analyze {

std::string plot_title(const std::string& text, const Options& o) {
  std::string t = gnuplot_quoted(text);
  if (!o.where.empty()) t += ".\"\\n\"." + gnuplot_quoted(join(o.where, ", "));
  return t + " noenhanced";
}

std::string key_placement(std::size_t longest_title) {
  return longest_title > 30 ? "set key below\n" : "";
}

namespace {

// An interval's ends cut to the values the quantity can take (an accuracy's t
// interval over 2 seeds can reach below 0); `cut` says that one was.
struct Clamp {
  Range range{-std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()};
  std::string quantity;
  bool cut = false;
  double operator()(double v) {
    if (std::isnan(v)) return v;  // a point where no run has a value
    const double c = std::min(std::max(v, range.lo), range.hi);
    cut = cut || c != v;
    return c;
  }
  // Said under the figure, since the tables give the ends uncut; empty when none was cut.
  std::string note() const {
    if (!cut) return "";
    return "the band's ends are cut at " + quantity + "'s range, " + format_number(range.lo) + " to " +
           (std::isinf(range.hi) ? "inf" : format_number(range.hi)) + " (the tables give them uncut)";
  }
};

// "set xtics (1, 2, 4, 8)" at the levels a study ran, while they are few enough to read.
std::string level_tics(const std::map<double, std::string>& levels) {
  if (levels.empty() || levels.size() > 12) return "";
  std::string tics = "set xtics (";
  for (auto it = levels.begin(); it != levels.end(); ++it) tics += (it == levels.begin() ? "" : ", ") + it->second;
  return tics + ")\n";
}

// plot --kind summary: the metric against the first --by key, a line per value of the others.
void plot_summary(const Runs& r, const Options& o, std::ostringstream& data, std::ostringstream& script, Clamp& clamp) {
  // Lines by every key after X: the thesis's households figure has one per (group_size,
  // group_sync_period) pair.
  if (o.by.empty()) throw UsageError("plot --kind summary needs --by X or --by X,LINES[,LINES...]");
  std::vector<std::string> lines_keys(o.by.begin() + 1, o.by.end());
  std::vector<std::string> plots;
  std::set<std::string> off_axis;        // x values that are not numbers (sync_period=never)
  std::map<double, std::string> levels;  // the x values placed, for the tics
  int block = 0;
  std::size_t longest_title = 0;
  clamp = Clamp{natural_range(metric_unit(r, o.metric)), o.metric};
  const Runs cells = with_shared_cells(r, o.by);  // one worker's run drawn at every sync_period
  const Counted counted = counted_for(o.metric, o.include_diverged);
  const std::vector<Group> lines = group_runs(cells, lines_keys, counted);
  const std::vector<std::string> names = line_names(lines_keys, lines);
  for (std::size_t li = 0; li < lines.size(); ++li) {
    const Group& line = lines[li];
    const Runs lr = subset(cells, line.runs);
    for (const Group& g : group_runs(lr, {o.by[0]}, counted)) {
      char* end = nullptr;
      std::strtod(g.key_values[0].c_str(), &end);
      if (g.key_values[0].empty() || *end != '\0') {
        off_axis.insert(g.key_values[0]);
        continue;
      }
      if (o.log_x && !(std::strtod(g.key_values[0].c_str(), nullptr) > 0)) {
        throw UsageError("plot --log_x: " + o.by[0] + " = " + g.key_values[0] +
                         " cannot be placed on a logarithmic axis (values must be > 0); leave it out with --where " +
                         o.by[0] + ">0");
      }
      const stats::Describe d = stats::describe(finite(metric_values(r, g.runs, o.metric)));
      if (d.n == 0) continue;
      levels.emplace(std::strtod(g.key_values[0].c_str(), nullptr), g.key_values[0]);
      const auto [lo, hi] = interval_ends(d, o.interval);
      data << g.key_values[0] << " " << format_number(d.mean) << " " << format_number(clamp(lo)) << " "
           << format_number(clamp(hi)) << "\n";
    }
    data << "\n\n";
    const std::string index = "datafile index " + std::to_string(block) + " ",
                      colour = " lc " + std::to_string(block + 1);
    const std::string text = lines_keys.empty() ? o.metric : names[li];
    longest_title = std::max(longest_title, text.size());
    const std::string title = " title " + gnuplot_quoted(text);
    if (o.interval == "none") {
      plots.push_back(index + "using 1:2 with linespoints lw 2 pt 7" + colour + title);
    } else if (o.style == "band") {
      plots.push_back(index + "using 1:3:4 with filledcurves fs transparent solid 0.2" + colour + " notitle");
      plots.push_back(index + "using 1:2 with linespoints lw 2 pt 7" + colour + title);
    } else {
      // Each line's points moved aside by its own small step (dodged): the bars of lines at one
      // level drew over each other. `dodge` is set below, once every level is known.
      const std::string x = "($1" + std::string(o.log_x ? " * dodge**" : " + dodge * ") + "(" + std::to_string(li) +
                            " - " + std::to_string(lines.size() - 1) + " / 2.0))";
      plots.push_back(index + "using " + x + ":2:3:4 with yerrorlines lw 2 pt 7" + colour + title);
    }
    ++block;
  }
  {
    // A step of 1.5 % of the axis between neighbouring lines, the whole spread at most 6 %; the
    // axis spans the levels (xfix: not widened to gnuplot's next tics) and the offsets' margins.
    const double lines_apart = lines.size() > 1 ? std::min(0.015, 0.06 / double(lines.size() - 1)) : 0;
    double dodge = o.log_x ? 1 : 0;
    if (!levels.empty()) {
      double lo = levels.begin()->first, hi = levels.rbegin()->first;
      if (levels.size() == 1) {  // one level (a --where on the x key): an axis of our own around it
        const double half = lo != 0 ? std::fabs(lo) / 2 : 1;
        lo = o.log_x ? lo / 2 : lo - half;
        hi = o.log_x ? hi * 2 : hi + half;
        script << "set xrange [" << format_number(lo) << ":" << format_number(hi) << "]\n";
      } else {
        script << "set autoscale xfix\n";
      }
      dodge = o.log_x ? std::pow(hi / lo, lines_apart) : (hi - lo) * lines_apart;
    }
    script << "dodge = " << format_number(dodge) << "\n";
  }
  script
      << "set xlabel " << gnuplot_quoted(with_unit(o.by[0], metric_unit(r, o.by[0]))) << "\nset ylabel "
      << gnuplot_quoted(with_unit(o.metric, metric_unit(r, o.metric))) << "\nset title "
      << plot_title(o.metric + ": " + mean_and(o) + " over seeds", o) << "\n"
      << "set offsets graph 0.05, graph 0.05, 0, 0\nset xlabel noenhanced\nset ylabel noenhanced\nset key noenhanced\n";
  if (o.log_x) script << "set logscale x 10\n";
  // Tics at the levels the study ran (workers 1, 2, 4, 8), not at gnuplot's round
  // numbers (1.2 workers), while they are few enough to read.
  script << level_tics(levels);
  if (data.str().find_first_not_of("\n") == std::string::npos && !off_axis.empty()) {
    std::string values;
    for (const std::string& x : off_axis) values += (values.empty() ? "" : ", ") + x;
    throw UsageError("plot --kind summary: the first --by key, " + o.by[0] + ", has no numeric value (" + values +
                     ") to place on the x axis; put a numeric key first, e.g. --by overlap," + o.by[0]);
  }
  script << key_placement(longest_title) << "plot ";
  for (std::size_t i = 0; i < plots.size(); ++i) script << (i ? ", \\\n     " : "") << plots[i];
  for (const std::string& x : off_axis) {
    std::printf("# %s=%s has no place on a numeric axis: left out of the plot (see summary)\n", o.by[0].c_str(),
                x.c_str());
  }
}

// plot --kind curves: learning curves with bands, a line per group.
void plot_curves(const Runs& r, const Options& o, std::ostringstream& data, std::ostringstream& script, Clamp& clamp) {
  int block = 0;
  std::size_t longest_title = 0;
  std::vector<std::string> plots;
  const std::vector<Curve> curves = curves_of(r, o);
  clamp = Clamp{natural_range(metric_unit(r, o.series)), o.series};
  std::vector<Group> lines;
  for (const Curve& c : curves) lines.push_back(Group{c.key_values, c.runs, 0});
  const std::vector<std::string> names = line_names(o.by, lines);
  for (std::size_t ci = 0; ci < curves.size(); ++ci) {
    const Curve& c = curves[ci];
    for (std::size_t i = 0; i < c.x.size(); ++i) {
      data << format_number(c.x[i]) << " " << format_number(c.mean[i]) << " " << format_number(clamp(c.lo[i])) << " "
           << format_number(clamp(c.hi[i])) << "\n";
    }
    data << "\n\n";
    const std::string title = names[ci];
    longest_title = std::max(longest_title, title.size());
    if (o.interval != "none") {
      plots.push_back("datafile index " + std::to_string(block) +
                      " using 1:3:4 with filledcurves fs transparent solid 0.2 lc " + std::to_string(block + 1) +
                      " notitle");
    }
    plots.push_back("datafile index " + std::to_string(block) + " using 1:2 with linespoints lw 2 pt 7 lc " +
                    std::to_string(block + 1) + " title " + gnuplot_quoted(title));
    ++block;
  }
  script << "set xlabel " << gnuplot_quoted(with_unit(o.x, metric_unit(r, o.x))) << " noenhanced\nset ylabel "
         << gnuplot_quoted(with_unit(o.series, metric_unit(r, o.series))) << " noenhanced\nset key noenhanced\n"
         << "set title " << plot_title("learning curves: " + mean_and(o) + " over seeds", o) << "\n"
         << key_placement(longest_title) << "plot ";
  for (std::size_t i = 0; i < plots.size(); ++i) script << (i ? ", \\\n     " : "") << plots[i];
}

// plot --kind reach: the fraction of each group's runs at the target (Kaplan-Meier).
void plot_reach(const Runs& r, const Options& o, std::ostringstream& data, std::ostringstream& script) {
  // The fraction of a group's runs at the target by each step (second): 1 - the Kaplan-Meier
  // survival, so a run that ended without reaching it still counts in the runs at risk.
  check_target(o);
  if (o.x != "step" && o.x != "time_s") throw ConfigError("x", o.x, "plot --kind reach draws against step or time_s");
  const std::string metric = o.series + (o.x == "time_s" ? "@reach_time=" : "@reach=") + format_number(o.target);
  // A band only when asked: with a few seeds a group's pointwise interval covers most of the figure.
  const bool interval_given =
      std::any_of(o.typed.begin(), o.typed.end(), [](const auto& t) { return t.first == "interval"; });
  if (interval_given && o.interval != "ci95" && o.interval != "none") {
    throw ConfigError("interval", o.interval,
                      "plot --kind reach draws the Kaplan-Meier estimate's pointwise 95 % interval (log-log, "
                      "Greenwood's variance): ci95 or none");
  }
  const bool band = interval_given && o.interval == "ci95";
  const std::vector<Group> groups = group_runs(r, o.by, Counted::to_goal);
  const std::vector<std::string> names = line_names(o.by, groups);
  std::vector<std::string> plots;
  std::size_t longest_title = 0, block = 0, line = 0;
  for (std::size_t gi = 0; gi < groups.size(); ++gi) {
    const stats::Censored c = censored_times(r, groups[gi].runs, metric);
    if (c.time.empty()) continue;
    const stats::Survival km = stats::kaplan_meier(c);
    const std::string end = format_number(*std::max_element(c.time.begin(), c.time.end()));
    const std::string colour = " lc " + std::to_string(++line);
    if (band) {  // the fraction's interval, 1 - S's ends, as steps: each held until the next event time
      const stats::SurvivalBand b = stats::km_band(km);
      std::string low = "0", high = "0";
      data << "0 0 0\n";
      for (std::size_t i = 0; i < km.time.size(); ++i) {
        const std::string t = format_number(km.time[i]);
        data << t << " " << low << " " << high << "\n";
        low = format_number(1 - b.high[i]);
        high = format_number(1 - b.low[i]);
        data << t << " " << low << " " << high << "\n";
      }
      data << end << " " << low << " " << high << "\n\n\n";
      plots.push_back("datafile index " + std::to_string(block++) +
                      " using 1:2:3 with filledcurves fs transparent solid 0.2" + colour + " notitle");
    }
    data << "0 0\n";
    double fraction = 0;
    for (std::size_t i = 0; i < km.time.size(); ++i) {
      fraction = 1 - km.survival[i];
      data << format_number(km.time[i]) << " " << format_number(fraction) << "\n";
    }
    // Flat to the longest run: where the estimate stops.
    data << end << " " << format_number(fraction) << "\n\n\n";
    const auto reached = std::count(c.event.begin(), c.event.end(), true);
    const std::string title = names[gi] + " (" + std::to_string(reached) + " of " + std::to_string(c.time.size()) + ")";
    longest_title = std::max(longest_title, title.size());
    plots.push_back("datafile index " + std::to_string(block++) + " using 1:2 with steps lw 2" + colour + " title " +
                    gnuplot_quoted(title));
  }
  if (plots.empty()) throw UsageError("plot --kind reach: no completed run to draw");
  const bool loss = o.series.find("loss") != std::string::npos;
  script << "set yrange [0:1.02]\nset xlabel " << gnuplot_quoted(o.x == "time_s" ? "time_s (s)" : "step")
         << " noenhanced\nset ylabel "
         << gnuplot_quoted("fraction of runs at " + o.series + (loss ? " <= " : " >= ") + num(o.target))
         << " noenhanced\nset key noenhanced\nset title "
         << plot_title(band ? "runs at the target (Kaplan-Meier, 95 % band; runs that never reached it count to "
                              "their end)"
                            : "runs at the target (Kaplan-Meier; runs that never reached it count until they ended)",
                       o)
         << "\n"
         << key_placement(longest_title) << "plot ";
  for (std::size_t i = 0; i < plots.size(); ++i) script << (i ? ", \\\n     " : "") << plots[i];
}

}  // namespace

std::string plot(const Runs& r, const Options& o) {
  if (o.output.empty()) throw UsageError("plot needs --output FILE.png, FILE.svg or FILE.gp");
  const std::string term = terminal_for(o.output);
  std::ostringstream data, script;
  Clamp clamp;  // summary and curves: the band's ends, cut to the quantity's range
  script << "set terminal " << term << "\nset grid\nset key outside right top\n";
  if (o.kind == "summary") {
    plot_summary(r, o, data, script, clamp);
  } else if (o.kind == "curves") {
    plot_curves(r, o, data, script, clamp);
  } else if (o.kind == "reach") {
    plot_reach(r, o, data, script);
  } else if (o.kind == "steps") {
    plot_steps(r, o, data, script);
  } else if (o.kind == "best_lr") {
    plot_best_lr(r, o, data, script);
  } else {
    throw ConfigError("kind", o.kind, "is not one of: " + join(plot_kinds(), ", "));
  }
  script << "\n";
  run_gnuplot(script.str(), data.str(), o.output);
  std::printf("wrote %s\n", o.output.c_str());
  const std::string cut = clamp.note();
  if (!cut.empty()) std::printf("# %s\n", cut.c_str());
  // A report has the notes in its tables; steps and best_lr pick one trial per batch size.
  if (o.command == "plot") {
    const bool trials = o.kind == "steps" || o.kind == "best_lr";
    const std::string note = trials ? trials_pooled_note(r, o.by) : pooled_note(r, o.by);
    if (!note.empty()) std::printf("# %s\n", note.c_str());
    if (o.kind == "summary") {
      if (const std::string goal = goal_note(r, o.metric); !goal.empty()) std::printf("# %s\n", goal.c_str());
    }
  }
  return cut;
}

}  // namespace dpstudy::analyze
