// Which command reads which option: an option a command would ignore is
// refused (summary --output sum.png wrote no file and said nothing), and the
// report shows under each part exactly the typed options that part used.
#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "commands.hpp"

namespace dpstudy::analyze {

namespace {

// Option -> the commands reading it; "plot:K" is plot --kind K. --where is
// read by all. report reads what it hands to its parts (summary, anova,
// compare, steps-to-result, the summary and curves figures).
const std::map<std::string, std::set<std::string>>& readers() {
  static const std::map<std::string, std::set<std::string>> table = {
      {"by",
       {"runs", "summary", "curves", "steps-to-result", "report", "plot:summary", "plot:curves", "plot:reach",
        "plot:steps", "plot:best_lr", "plot:scaling"}},
      {"metric", {"runs", "summary", "compare", "anova", "power", "report", "plot:summary"}},
      {"factor", {"compare", "power", "report"}},
      {"within", {"compare", "anova", "power", "report"}},
      {"factors", {"anova"}},
      {"baseline", {"compare", "power", "report"}},
      {"equivalence", {"compare", "power", "report"}},
      {"alpha", {"compare", "power", "report"}},
      {"include_diverged", {"summary", "compare", "anova", "curves", "report", "plot:summary", "plot:curves"}},
      {"log_x", {"report", "plot:summary"}},
      {"format",
       {"runs", "summary", "compare", "anova", "power", "curves", "steps-to-result", "throughput", "check-stats"}},
      {"effect", {"power"}},
      {"hazard_ratio", {"power", "report"}},
      {"power", {"power"}},
      {"series", {"curves", "steps-to-result", "report", "plot:curves", "plot:reach", "plot:steps", "plot:best_lr"}},
      {"x", {"curves", "report", "plot:curves", "plot:reach"}},
      {"target", {"steps-to-result", "report", "plot:reach", "plot:steps", "plot:best_lr"}},
      {"throughput", {"steps-to-result"}},
      {"kind", {"plot:summary", "plot:curves", "plot:reach", "plot:steps", "plot:best_lr", "plot:scaling"}},
      {"interval", {"curves", "report", "plot:summary", "plot:curves", "plot:reach"}},
      {"style", {"report", "plot:summary"}},
      {"output", {"report", "plot:summary", "plot:curves", "plot:reach", "plot:steps", "plot:best_lr", "plot:scaling"}},
  };
  return table;
}

}  // namespace

const std::vector<std::string>& plot_kinds() {
  static const std::vector<std::string> kinds = {"summary", "curves", "reach", "steps", "best_lr", "scaling"};
  return kinds;
}

std::string shell_word(const std::string& s) {
  const bool plain = !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::string("_-.,/:+@%").find(c) != std::string::npos;
  });
  if (plain) return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

bool reads_option(const std::string& command, const std::string& kind, const std::string& name) {
  const auto it = readers().find(name);
  if (it == readers().end()) return name != "where" || command != "check-stats";  // --where, --help: the others
  return it->second.count(command == "plot" ? "plot:" + kind : command) > 0;
}

std::string commands_reading(const std::string& name) {
  const auto it = readers().find(name);
  if (it == readers().end()) return "every command but check-stats";  // --where
  std::vector<std::string> commands, kinds;
  for (const std::string& c : it->second) {
    if (c.rfind("plot:", 0) == 0) {
      kinds.push_back(c.substr(5));
    } else {
      commands.push_back(c);
    }
  }
  if (kinds.size() == plot_kinds().size()) {
    commands.push_back("plot");
  } else if (!kinds.empty()) {
    commands.push_back("plot --kind " + join(kinds, "|"));
  }
  return join(commands, ", ");
}

std::string typed_options(const Options& o, const std::string& command, const std::string& kind,
                          const std::vector<std::string>& skip) {
  std::string out;
  for (const auto& [name, values] : o.typed) {
    if (std::find(skip.begin(), skip.end(), name) != skip.end() || !reads_option(command, kind, name)) continue;
    out += " --" + name;
    for (const std::string& v : values) out += " " + shell_word(v);
  }
  return out;
}

}  // namespace dpstudy::analyze
