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

namespace fs = std::filesystem;

namespace dpstudy::analyze {

// One document for a study: the summary by the --by keys, their factorial
// ANOVA, the comparisons of --factor and the figures, each with the command
// that makes it on its own.
void report(const Runs& r, const Options& o) {
  if (o.output.empty()) throw UsageError("report needs --output FOLDER (report.md and its figures go there)");
  if (o.by.empty() || o.by.size() > 4) {
    throw UsageError("report needs --by K1[,K2,...]: 1 to 4 keys to group by (the first is its figures' x axis)");
  }
  require_columns(r, o.by, "--by");
  std::error_code ec;
  fs::create_directories(o.output, ec);
  const std::string path = (fs::path(o.output) / "report.md").string();
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> md(std::fopen(path.c_str(), "w"), std::fclose);
  if (!md) throw ConfigError("output", o.output, "cannot be written (" + path + ")");
  std::FILE* out = md.get();

  std::string by = join(o.by, ","), dirs = join(o.dirs, " "), filters;
  for (const std::string& w : o.where) filters += " --where '" + w + "'";
  const std::string common = dirs + filters + (o.metric == "final_test_accuracy" ? "" : " --metric " + o.metric);
  const auto section = [&](const std::string& title, const std::string& command) {
    std::fprintf(out, "## %s\n\n```sh\ndpstudy-analyze %s\n```\n\n", title.c_str(), command.c_str());
  };
  std::set<std::string> studies;
  std::map<std::string, int> status;
  for (const Run& run : r.runs) {
    studies.insert(run.text("study").value_or("?"));
    ++status[run.text("status").value_or("?")];
  }
  std::string counts;
  for (const auto& [s, n] : status) counts += (counts.empty() ? "" : ", ") + std::to_string(n) + " " + s;
  std::fprintf(out, "# %s\n\n%zu runs (%s) from %s%s. Metric: %s. Made by dpstudy-analyze report.\n\n",
               join(std::vector<std::string>(studies.begin(), studies.end()), ", ").c_str(), r.runs.size(),
               counts.c_str(), dirs.c_str(), filters.empty() ? "" : (", runs kept by" + filters).c_str(),
               o.metric.c_str());

  section("Summary", "summary " + common + " --by " + by);
  print(summary(r, o), Format::markdown, out);
  if (o.by.size() >= 2) {
    Options a = o;
    a.factors = o.by;
    section("Factorial ANOVA", "anova " + common + " --factors " + by);
    print(anova(r, a), Format::markdown, out);
  }
  if (!o.factor.empty()) {
    Options c = o;
    if (c.within.empty()) {  // the other --by keys: one family per combination of them
      for (const std::string& k : o.by) {
        if (k != o.factor) c.within.push_back(k);
      }
    }
    section("Comparisons of " + o.factor,
            "compare " + common + " --factor " + o.factor + (c.within.empty() ? "" : " --within " + join(c.within, ",")) +
                (o.equivalence > 0 ? " --equivalence " + num(o.equivalence) : ""));
    print(compare(r, c), Format::markdown, out);
  }
  std::fprintf(out, "## Figures\n\n");
  const auto figure = [&](const std::string& kind, const std::vector<std::string>& keys, const std::string& file) {
    Options f = o;
    f.kind = kind;
    f.by = keys;
    f.output = (fs::path(o.output) / file).string();
    std::fprintf(out, "```sh\ndpstudy-analyze plot --kind %s %s --by %s --output %s\n```\n\n", kind.c_str(),
                 common.c_str(), join(keys, ",").c_str(), file.c_str());
    try {
      plot(r, f);
      std::fprintf(out, "![%s by %s](%s)\n\n", kind.c_str(), join(keys, ", ").c_str(), file.c_str());
    } catch (const std::exception& e) {
      std::fprintf(out, "(no figure: %s)\n\n", e.what());
    }
  };
  if (o.by.size() > 2) {
    std::fprintf(out, "The figures show the first --by keys; each point pools the runs of every level of %s "
                      "(add --where to draw one slice).\n\n",
                 join(std::vector<std::string>(o.by.begin() + 2, o.by.end()), ", ").c_str());
  }
  figure("summary", std::vector<std::string>(o.by.begin(), o.by.begin() + std::min<std::size_t>(2, o.by.size())),
         "summary.png");
  figure("curves", {o.by[0]}, "curves.png");
  std::printf("wrote %s\n", path.c_str());
}

}  // namespace dpstudy::analyze
