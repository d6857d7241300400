// dpstudy-analyze report: one markdown document for a study, with its
// tables, tests and figures, each with the command that makes it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <filesystem>
#include <memory>

#include "commands.hpp"
#include "dpstudy/error.hpp"
#include "dpstudy/stats.hpp"
#include "dpstudy/study.hpp"

namespace fs = std::filesystem;

namespace dpstudy::analyze {

// One document for a study: the summary by the --by keys, their factorial
// ANOVA, the comparisons of --factor, the steps and time to --target, and the
// figures, each with the command that makes it on its own.
namespace {

// What every part of a report shares: the runs, the options, the document,
// and how each part's command is spelled to run it alone.
struct ReportParts {
  const Runs& r;
  const Options& o;
  std::FILE* out;
  std::string by, dirs, filters, families;
  std::vector<std::string> within;  // the comparisons' families
  // The folders, the typed options that part reads, then those the report sets for it.
  std::string command(const std::string& name, const std::string& kind, const std::string& set,
                      const std::vector<std::string>& skip) const {
    return (name == "plot" ? "plot --kind " + kind + " " : name + " ") + dirs + typed_options(o, name, kind, skip) +
           set;
  }
  void section(const std::string& title, const std::string& shown) const {
    std::fprintf(out, "## %s\n\n```sh\ndpstudy-analyze %s\n```\n\n", title.c_str(), shown.c_str());
  }
  // Why a part whose command alone refuses these runs (a key of one value compares nothing) has no table.
  std::string refusal(const std::vector<std::string>& keys, const char* option) const {
    try {
      require_levels(r, keys, option);
      return "";
    } catch (const UsageError& e) {
      return e.what();
    }
  }
};

// The throughput tables beside the study, and the --where filters they can take.
struct Timed {
  std::vector<std::string> dirs, where;
  std::string dirs_text;  // " DIR... --where ...", for the commands
};

// The title, what the runs are and were trained on, and the warnings.
void write_heading(const ReportParts& p) {
  const Runs& r = p.r;
  const Options& o = p.o;
  std::FILE* out = p.out;
  std::set<std::string> studies;
  std::map<std::string, int> status, data;  // data: "dataset (data_digest D" -> runs
  for (const Run& run : r.runs) {
    studies.insert(run.text("study").value_or("?"));
    ++status[run.text("status").value_or("?")];
    const std::string digest = run.text("data_digest").value_or("");
    ++data[run.text("dataset").value_or("?") + (digest.empty() ? " (files not recorded" : " (data_digest " + digest)];
  }
  std::string counts, trained_on;
  for (const auto& [s, n] : status) counts += (counts.empty() ? "" : ", ") + std::to_string(n) + " " + s;
  for (const auto& [d, n] : data) {
    trained_on += (trained_on.empty() ? "" : ", ") + d + ": " + std::to_string(n) + " runs)";
  }
  std::fprintf(out, "# %s\n\n%zu runs (%s) from %s%s. Metric: %s. Data: %s. Made by dpstudy-analyze report.\n\n",
               join(std::vector<std::string>(studies.begin(), studies.end()), ", ").c_str(), r.runs.size(),
               counts.c_str(), p.dirs.c_str(), p.filters.empty() ? "" : (", runs kept by" + p.filters).c_str(),
               o.metric.c_str(), trained_on.c_str());
  for (const std::string& w : r.warnings) std::fprintf(out, "**Warning**: %s.\n\n", w.c_str());
}

// The summary by the --by keys and, for two or more, their factorial ANOVA.
void write_summary(const ReportParts& p) {
  const Runs& r = p.r;
  const Options& o = p.o;
  std::FILE* out = p.out;
  const std::string& by = p.by;
  p.section("Summary", p.command("summary", "", " --by " + by, {"by"}));
  print(summary(r, o), Format::markdown, out);
  if (o.by.size() >= 2) {
    Options a = o;
    a.factors = o.by;
    a.within.clear();  // the report's --within is for the comparisons; every --by key is a factor here
    p.section("Factorial ANOVA", p.command("anova", "", " --factors " + by, {"within"}));
    if (const std::string why = p.refusal(o.by, "--factors"); !why.empty()) {
      std::fprintf(out, "(no table: %s)\n\n", why.c_str());
    } else {
      print(anova(r, a), Format::markdown, out);
    }
  }
}

// The comparisons of --factor and their power.
void write_comparisons(const ReportParts& p) {
  const Runs& r = p.r;
  const Options& o = p.o;
  std::FILE* out = p.out;
  const std::vector<std::string>& within = p.within;
  const std::string& families = p.families;
  if (!o.factor.empty()) {
    Options c = o;
    c.within = within;
    p.section("Comparisons of " + o.factor, p.command("compare", "", families, {"factor", "within"}));
    if (const std::string why = p.refusal({o.factor}, "--factor"); !why.empty()) {
      std::fprintf(out, "(no table: %s)\n\n", why.c_str());
    } else {
      print(compare(r, c), Format::markdown, out);
      // Not significant is not "no difference": what these runs could have detected.
      // --hazard_ratio is the log-rank test's: of this metric only if it is a time to a goal.
      const bool goal = is_goal_metric(o.metric);
      if (!goal) c.hazard_ratio = 0;
      p.section("Power of the comparisons of " + o.factor,
                p.command("power", "", families,
                          goal ? std::vector<std::string>{"factor", "within"}
                               : std::vector<std::string>{"factor", "within", "hazard_ratio"}));
      print(power(r, c), Format::markdown, out);
    }
  }
}

// The steps and time to --target: of the runs that got there, then of every run.
void write_target(const ReportParts& p) {
  const Runs& r = p.r;
  const Options& o = p.o;
  std::FILE* out = p.out;
  const std::string& by = p.by;
  const std::vector<std::string>& within = p.within;
  const std::string& families = p.families;
  // How soon each group gets there: the other half of a study's question.
  if (!std::isnan(o.target)) {
    const bool loss = o.series.find("loss") != std::string::npos;
    const std::string goal = o.series + (loss ? " <= " : " >= ") + num(o.target);
    p.section("Steps and time to " + goal, p.command("steps-to-result", "", " --by " + by, {"by"}));
    print(steps_to_result(r, o), Format::markdown, out);
    // The same steps with every run counted: the Kaplan-Meier median, and the
    // log-rank test of --factor (the table above is of the runs that got there).
    std::string target;
    for (const auto& [name, words] : o.typed) {
      if (name == "target" && !words.empty()) target = words.back();  // as typed: its text is the metric's
    }
    // In steps, then in seconds: a setting that takes more steps can still get there sooner
    // (local SGD averages less often), and that is the question of time to result.
    for (const bool seconds : {false, true}) {
      Options g = o;
      g.metric = o.series + (seconds ? "@reach_time=" : "@reach=") + target;
      const std::string metric = " --metric " + shell_word(g.metric), what = seconds ? "time to " : "steps to ";
      p.section((seconds ? "Time to " : "Steps to ") + goal + ", every run counted",
                p.command("summary", "", " --by " + by + metric, {"by", "metric"}));
      print(summary(r, g), Format::markdown, out);
      if (o.factor.empty() || !p.refusal({o.factor}, "--factor").empty()) continue;
      Options c = g;
      c.within = within;
      c.equivalence = 0;  // its margin is in the unit of --metric, not in steps or seconds
      c.alpha = Options{}.alpha;  // the report's --alpha is the equivalence test's
      p.section("Comparisons of " + o.factor + ": " + what + goal,
                p.command("compare", "", families + metric, {"factor", "within", "metric", "equivalence", "alpha"}));
      print(compare(r, c), Format::markdown, out);
      // The power of the same design in seconds is that in steps: one table.
      if (seconds) continue;
      p.section("Power of the comparisons of " + o.factor + ": " + what + goal,
                p.command("power", "", families + metric, {"factor", "within", "metric", "equivalence", "alpha"}));
      print(power(r, c), Format::markdown, out);
    }
  }
}

// The speed of the same sweep, where --mode throughput measured it into these folders too.
Timed write_throughput(const ReportParts& p) {
  const Options& o = p.o;
  std::FILE* out = p.out;
  Timed t;
  const std::vector<std::string>& timed = t.dirs = with_speed_table(o.dirs);
  std::string& timed_dirs = t.dirs_text;
  for (const std::string& d : timed) timed_dirs += " " + shell_word(d);
  // The filters on keys a table has (workers=4 slices it too; overlap=0 names no point's key).
  std::vector<std::set<std::string>> columns(timed.size());
  for (std::size_t i = 0; i < timed.size(); ++i) {
    try {
      for (const auto& column : read_speed((fs::path(timed[i]) / "throughput.h5").string()).columns) {
        columns[i].insert(column.first);
      }
    } catch (const std::exception&) {  // a damaged table: the section below says why it has none
    }
  }
  std::vector<std::string>& timed_where = t.where;
  std::vector<std::string> untimed_where;
  for (const std::string& w : o.where) {
    const std::string key = parse_comparison(w, "where", w).key;
    const bool everywhere = std::all_of(columns.begin(), columns.end(),
                                        [&key](const std::set<std::string>& c) { return c.count(key) > 0; });
    (everywhere ? timed_where : untimed_where).push_back(w);
  }
  for (const std::string& w : timed_where) timed_dirs += " --where " + shell_word(w);
  if (!timed.empty()) {
    Options speed = o;
    speed.dirs = timed;
    speed.where = timed_where;
    p.section("Throughput", "throughput" + timed_dirs);
    if (!untimed_where.empty()) {
      std::fprintf(out, "(--where %s left out here: the throughput table has no such column)\n\n",
                   join(untimed_where, ", --where ").c_str());
    }
    try {
      print(throughput(speed), Format::markdown, out);
    } catch (const std::exception& e) {
      std::fprintf(out, "(no table: %s)\n\n", e.what());
    }
  }
  return t;
}

// Whether the report draws steps.png: with a --target and a first --by key that
// scales the batch (Study B), as plot --kind steps needs.
bool draws_steps(const Options& o) { return !std::isnan(o.target) && scales_the_batch(o.by[0]); }

// The figures, each with its command.
void write_figures(const ReportParts& p, const Timed& speed) {
  const Runs& r = p.r;
  const Options& o = p.o;
  std::FILE* out = p.out;
  const std::vector<std::string>& timed = speed.dirs;
  const std::vector<std::string>& timed_where = speed.where;
  const std::string& timed_dirs = speed.dirs_text;
  std::fprintf(out, "## Figures\n\n");
  const auto figure = [&](const std::string& kind, const std::vector<std::string>& keys, const std::string& file) {
    Options f = o;
    f.kind = kind;
    f.by = keys;
    f.output = (fs::path(o.output) / file).string();
    std::vector<std::string> skip = {"by", "output"};
    // The reach figure's band is the Kaplan-Meier interval: an --interval of the means (sd, sem, range) is not for it.
    if (kind == "reach" && o.interval != "ci95" && o.interval != "none") {
      skip.push_back("interval");
      f.typed.erase(std::remove_if(f.typed.begin(), f.typed.end(), [](const auto& t) { return t.first == "interval"; }),
                    f.typed.end());
    }
    std::fprintf(out, "```sh\ndpstudy-analyze %s\n```\n\n",
                 p.command("plot", kind, " --by " + join(keys, ",") + " --output " + file, skip).c_str());
    try {
      const std::string note = plot(r, f);
      std::fprintf(out, "![%s by %s](%s)\n\n", kind.c_str(), join(keys, ", ").c_str(), file.c_str());
      if (!note.empty()) std::fprintf(out, "In this figure %s.\n\n", note.c_str());
    } catch (const std::exception& e) {
      std::fprintf(out, "(no figure: %s)\n\n", e.what());
    }
  };
  // A line per combination of the --by keys after the first while they stay readable (the
  // thesis's households: a line per size and period); beyond, the first two keys, the rest pooled.
  constexpr std::size_t kMostLines = 8;
  std::vector<std::string> drawn = o.by;
  if (o.by.size() > 2 &&
      group_runs(r, std::vector<std::string>(o.by.begin() + 1, o.by.end()), Counted::every).size() > kMostLines) {
    drawn.resize(2);
    std::fprintf(out, "The figures show the first --by keys (their other keys' combinations would draw more than %zu "
                      "lines); each point pools the runs of every level of %s (add --where to draw one slice).\n\n",
                 kMostLines, join(std::vector<std::string>(o.by.begin() + 2, o.by.end()), ", ").c_str());
  }
  figure("summary", drawn, "summary.png");
  // Learning curves: a line per combination of every --by key while that stays readable (the
  // quick start's 4 overlap and sync period pairs, whose curves differ), else per level of the first.
  const bool every_key = group_runs(r, o.by, Counted::every).size() <= kMostLines;
  figure("curves", every_key ? o.by : std::vector<std::string>{o.by[0]}, "curves.png");
  if (!std::isnan(o.target)) figure("reach", drawn, "reach.png");
  // Against the batch: the steps to T, a line per combination of the other keys.
  if (draws_steps(o)) figure("steps", drawn, "steps.png");
  if (!timed.empty()) {
    Options f = o;
    f.dirs = timed;
    f.where = timed_where;
    f.kind = "scaling";
    f.by.clear();
    f.output = (fs::path(o.output) / "scaling.png").string();
    std::fprintf(out, "```sh\ndpstudy-analyze plot --kind scaling%s --output scaling.png\n```\n\n", timed_dirs.c_str());
    try {
      const std::vector<std::string> notes = plot_scaling(f);
      std::fprintf(out, "![throughput against workers](scaling.png)\n\n");
      for (const std::string& note : notes) std::fprintf(out, "- %s\n", note.c_str());
      std::fprintf(out, "\n");
    } catch (const std::exception& e) {
      std::fprintf(out, "(no figure: %s)\n\n", e.what());
    }
  }
}

}  // namespace

void report(const Runs& r, const Options& o) {
  if (o.output.empty()) throw UsageError("report needs --output FOLDER (report.md and its figures go there)");
  if (o.by.empty() || o.by.size() > 4) {
    throw UsageError("report needs --by K1[,K2,...]: 1 to 4 keys to group by (the first is its figures' x axis)");
  }
  require_columns(r, o.by, "--by");
  if (!o.factor.empty()) {  // typos end the report before it is begun
    require_columns(r, {o.factor}, "--factor");
    check_baseline(r, o);
  }
  if (!std::isnan(o.target)) check_target(o);
  std::error_code ec;
  fs::create_directories(o.output, ec);
  // Written beside report.md and renamed over it once whole: a report that fails halfway (an unknown
  // metric) leaves the previous one, not half of a new one.
  const std::string path = (fs::path(o.output) / "report.md").string(), partial = path + ".partial";
  struct RemoveUnlessKept {
    const std::string& file;
    bool keep = false;
    ~RemoveUnlessKept() {
      if (!keep) std::remove(file.c_str());
    }
  } unless_done{partial};
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> md(std::fopen(partial.c_str(), "w"), std::fclose);
  if (!md) throw ConfigError("output", o.output, "cannot be written (" + partial + ")");
  std::FILE* out = md.get();

  ReportParts p{r, o, out, join(o.by, ","), "", "", "", {}};
  for (const std::string& d : o.dirs) p.dirs += (p.dirs.empty() ? "" : " ") + shell_word(d);
  for (const std::string& w : o.where) p.filters += " --where " + shell_word(w);
  // The comparisons' families: each combination of --within, or of the other --by keys.
  std::vector<std::string>& within = p.within;
  within = o.within;
  if (within.empty()) {
    for (const std::string& k : o.by) {
      if (k != o.factor) within.push_back(k);
    }
  }
  p.families = " --factor " + o.factor + (within.empty() ? "" : " --within " + join(within, ","));
  write_heading(p);
  write_summary(p);
  write_comparisons(p);
  write_target(p);
  const Timed timed = write_throughput(p);
  write_figures(p, timed);
  const bool written = std::fflush(out) == 0 && !std::ferror(out);
  if (std::fclose(md.release()) != 0 || !written || std::rename(partial.c_str(), path.c_str()) != 0) {
    throw ConfigError("output", o.output, "cannot be written (" + path + ")");
  }
  unless_done.keep = true;
  std::printf("wrote %s\n", path.c_str());
  // A figure of an earlier report that this one has not (no --target, no throughput table now)
  // would sit beside report.md as if it were current.
  for (const auto& [file, made] : {std::pair<const char*, bool>{"reach.png", !std::isnan(o.target)},
                                   std::pair<const char*, bool>{"steps.png", draws_steps(o)},
                                   std::pair<const char*, bool>{"scaling.png", !timed.dirs.empty()}}) {
    const fs::path stale = fs::path(o.output) / file;
    if (!made && fs::remove(stale, ec)) std::printf("removed %s (an earlier report's)\n", stale.string().c_str());
  }
}

}  // namespace dpstudy::analyze
