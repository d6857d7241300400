// A workload executable's command line and study file, read into a Request.
#include <boost/program_options.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>

#include "dpstudy/build_info.hpp"
#include "dpstudy/error.hpp"
#include "dpstudy/option_errors.hpp"
#include "dpstudy/options.hpp"
#include "dpstudy/runtime_info.hpp"
#include "dpstudy/workload.hpp"
#include "job.hpp"
#include "job_options.hpp"

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace dpstudy {
namespace {

using Sections = std::vector<const po::options_description*>;

// A study file not found as given is looked for among the shipped ones: the
// source tree's studies/, then the installed <prefix>/share/dpstudy/studies.
std::string find_study_file(const std::string& given) {
  std::error_code ec;
  if (fs::exists(given, ec) || fs::path(given).filename() != fs::path(given)) return given;
  for (const std::string& dir : {build_info().source_dir + "/studies", installed_share_dir() + "/studies"}) {
    if (fs::exists(fs::path(dir) / given, ec)) return (fs::path(dir) / given).string();
  }
  return given;
}

// The name is a folder under --output and a word in logs that tools split on
// whitespace (dpstudy-slurm), so it is one plain path component.
void check_study_name(const std::string& name, const std::string& study_file) {
  const bool plain = !name.empty() && name.size() <= 128 && name.front() != '.' && name.front() != '-' &&
                     std::all_of(name.begin(), name.end(), [](unsigned char c) {
                       return std::isalnum(c) || c == '.' || c == '_' || c == '-' || c == '+';
                     });
  if (plain) return;
  const std::string allowed =
      "must be 1 to 128 letters, digits, '.', '_', '-' or '+', not starting with '.' or '-' (it names the study's "
      "folder under --output)";
  if (study_file.empty()) throw ConfigError("name", name, allowed);
  throw ConfigError("name", name, allowed + "; it comes from the file name of " + study_file +
                                      ": give the study a name key");
}

}  // namespace

namespace {

// The command line's words, each option spelled with '_' and without its
// study-file section; Google Benchmark's flags apart, untouched.
std::vector<std::string> command_line_args(int argc, char** argv, std::vector<std::string>* benchmark_flags,
                                           std::map<std::string, std::string>* sectioned) {
  std::vector<std::string> cli_args;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    // Every option is spelled with '_' (as its study key, and as Google
    // Benchmark's); '-' is taken too, as the other dpstudy tools spell theirs so:
    // --data-dir, --dry-run.
    if (a.rfind("--", 0) == 0) {
      const auto name_end = std::find(a.begin(), a.end(), '=');
      std::replace(a.begin() + 2, name_end, '-', '_');
      // A key may carry its study-file section, --sweep.workers 1,2,4, which
      // only groups keys there too ([sweep] workers = 1,2,4).
      const std::string name(a.begin() + 2, name_end);
      if (const auto dot = name.rfind('.'); dot != std::string::npos && dot > 0 && dot + 1 < name.size()) {
        const std::string key = name.substr(dot + 1);
        (*sectioned)[key] = "--" + name;
        a = "--" + key + std::string(name_end, a.end());
      }
    }
    (a.rfind("--benchmark_", 0) == 0 ? *benchmark_flags : cli_args).push_back(a);
  }
  return cli_args;
}

// The request's axes, search trials, exclude rules and swept keys, from the
// study's values (study file, then command line); takes the study keys out of `values`.
void set_axes(Request& r, RawValues& values, const Workload& workload) {
  const std::vector<std::string>& keys = r.keys;
  auto take = [&](const std::string& k) {
    std::string v;
    auto it = std::find_if(values.begin(), values.end(), [&](const auto& kv) { return kv.first == k; });
    if (it != values.end()) {
      v = it->second;
      values.erase(it);
    }
    return v;
  };
  take("workload");  // checked by read_study_file: a study says which workloads it was written for
  r.name = take("name");
  const std::string seeds = take("seeds");
  const std::string exclude = take("exclude");
  RawValues search_values;
  for (const auto& k : search_keys()) {
    const std::string v = take(k);
    if (!v.empty()) search_values.emplace_back(k, v);
  }
  const SearchSpec search_spec = parse_search(search_values);
  r.searched = !search_spec.method.empty();
  r.stop_beaten = search_spec.stop_beaten;
  r.trials = r.searched ? search_trials(search_spec) : std::vector<RawValues>{RawValues{}};

  std::vector<std::string> list_keys = workload.list_keys;
  list_keys.push_back("lr_milestones");
  for (const auto& k : keys) {
    auto it = std::find_if(values.begin(), values.end(), [&](const auto& kv) { return kv.first == k; });
    if (it == values.end()) continue;
    if (k == "seed" && !seeds.empty()) throw ConfigError("seeds", seeds, "cannot be combined with --seed");
    const bool is_list = std::find(list_keys.begin(), list_keys.end(), k) != list_keys.end();
    r.axes.emplace_back(k, split_axis(k, it->second, is_list));
  }
  const std::string global = take(kGlobalBatch);
  if (!global.empty()) {
    if (std::any_of(r.axes.begin(), r.axes.end(), [](const auto& a) { return a.first == "batch_size"; })) {
      throw ConfigError(kGlobalBatch, global, "cannot be combined with batch_size: it sets each run's batch_size");
    }
    r.axes.emplace_back(kGlobalBatch, split_axis(kGlobalBatch, global, false));
  }
  if (!seeds.empty()) r.axes.emplace_back("seed", expand_seeds(seeds));
  for (const auto& [k, v] : r.axes) {
    if (v.size() > 1) r.swept.push_back(k);
    for (const auto& dim : search_spec.dims) {
      if (dim.key == k) throw ConfigError("search_" + k, "", "conflicts with the " + k + " key: give one of the two");
    }
  }
  const auto swept = [&r](const std::string& k) {
    return std::find(r.swept.begin(), r.swept.end(), k) != r.swept.end();
  };
  if (swept(kGlobalBatch) || (!global.empty() && swept("workers"))) {
    r.swept.push_back("batch_size");  // each run's, from global_batch / workers (study_plan.cpp)
  }
  if (r.searched) {
    for (const auto& dim : search_spec.dims) r.swept.push_back(dim.key);
    r.swept.push_back("trial");
  }
  std::vector<std::string> rule_keys = keys;
  rule_keys.push_back(kGlobalBatch);
  r.rules = parse_exclude(exclude, rule_keys);
}

// --help_markdown: each group of options as a table of option, default and
// meaning, for docs/options.md (tools/options-doc). Boost 1.74 gives no
// group's caption but as the first line of its printed help.
void print_help_markdown(const std::string& title, const Sections& groups) {
  const auto one_line = [](const std::string& text) {
    std::string out;
    for (char ch : text) {
      if (std::isspace(static_cast<unsigned char>(ch))) {
        if (!out.empty() && out.back() != ' ') out += ' ';
      } else {
        // A bar ends a cell; <run id> would be read as HTML.
        out += ch == '|' ? "\\|" : ch == '<' ? "&lt;" : ch == '>' ? "&gt;" : std::string(1, ch);
      }
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out;
  };
  std::cout << "# " << title << "\n";
  for (const po::options_description* g : groups) {
    std::ostringstream printed;
    printed << *g;
    std::string caption = printed.str().substr(0, printed.str().find('\n'));
    if (!caption.empty() && caption.back() == ':') caption.pop_back();
    std::cout << "\n## " << caption << "\n\n| option | default | meaning |\n| --- | --- | --- |\n";
    for (const auto& opt : g->options()) {
      const std::string parameter = opt->format_parameter();  // "arg (=0)", or "" for a flag
      const std::size_t at = parameter.find("(=");
      const std::string fallback =
          at == std::string::npos ? "" : parameter.substr(at + 2, parameter.size() - at - 3);  // less ")"
      std::cout << "| `--" << opt->long_name() << "` | " << (fallback.empty() ? "" : "`" + fallback + "`") << " | "
                << one_line(opt->description()) << " |\n";
    }
  }
}

// --help, or --help_markdown.
void print_help(const std::string& prog, const std::string& summary, const Sections& groups, bool markdown) {
  if (markdown) return print_help_markdown(prog + ": " + summary, groups);
  po::options_description all(prog + " [--key value]...: " + summary);
  for (const po::options_description* g : groups) all.add(*g);
  std::cout << all << "\nDefinitions and formulas: docs/engine.md; studies: docs/studies.md\n";
}

// --version: the build, its commit and what is built in.
void print_version(const std::string& prog) {
  const BuildInfo b = build_info();
  std::printf("%s dpstudy %s commit %s changes %s libtorch %s mpi %s cuda %s\n", prog.c_str(), b.version.c_str(),
              b.git_commit.c_str(), b.git_changes.c_str(), torch_version().c_str(), b.with_mpi ? "on" : "off",
              b.with_cuda ? "on" : "off");
}

}  // namespace

std::optional<Request> read_request(int argc, char** argv, const Workload& workload, bool print) {
  const std::string prog = "dpstudy-" + workload.name;
  Request r;
  JobOptions& g = r.options;
  JobDescriptions d;
  describe_job_options(d, g);
  RunOptions run_help(workload.defaults);
  po::options_description model_help("Model");
  if (workload.model_options) workload.model_options(model_help);

  // Every run and model key, as text: a study gives lists, resolved per run by plan_runs.
  for (const po::options_description* o : Sections{&run_help.description(), &model_help}) {
    for (const auto& opt : o->options()) r.keys.push_back(opt->long_name());
  }
  const std::vector<std::string>& keys = r.keys;
  po::options_description raw;
  for (const auto& k : keys) raw.add_options()(k.c_str(), po::value<std::string>());
  po::options_description cli;
  cli.add(d.general).add(d.study).add(d.search).add(d.speed).add(raw);
  std::map<std::string, std::string> sectioned;  // key -> as given: "workers" -> "--sweep.workers"
  const std::vector<std::string> cli_args = command_line_args(argc, argv, &g.benchmark_flags, &sectioned);
  po::variables_map vm;
  try {
    store_options(po::command_line_parser(cli_args).options(cli).run(), vm);
  } catch (const po::unknown_option& e) {
    std::vector<std::string> all = keys;
    for (const po::options_description* o : Sections{&d.general, &d.study, &d.search, &d.speed}) {
      for (const auto& opt : o->options()) all.push_back(opt->long_name());
    }
    std::string bad = e.get_option_name();
    while (!bad.empty() && bad[0] == '-') bad.erase(0, 1);
    const auto given = sectioned.find(bad);
    throw UsageError("unrecognised option '" + (given == sectioned.end() ? "--" + bad : given->second) + "'" +
                     did_you_mean(bad, all, "--", ""));
  }
  if (vm.count("version")) {
    if (!print) return std::nullopt;
    print_version(prog);
    return std::nullopt;
  }
  if (vm.count("help") || vm.count("help_markdown")) {
    const Sections groups{&d.general, &d.study, &d.search, &d.speed, &run_help.description(), &model_help};
    if (print) print_help(prog, workload.summary, groups, vm.count("help_markdown") > 0);
    return std::nullopt;
  }
  po::notify(vm);
  g.expect_given = vm.count("expect_accuracy") > 0;
  g.threads_given = !vm["threads"].defaulted();
  g.parallel_given = !vm["parallel"].defaulted();
  g.device_given = !vm["device"].defaulted();
  check_job_options(g);

  // Study file first, then the command line on top.
  std::vector<std::string> study_keys = keys;
  for (const char* k : {"name", "seeds", "exclude", "workload", kGlobalBatch}) study_keys.push_back(k);
  for (const auto& k : search_keys()) study_keys.push_back(k);
  RawValues values;
  if (!g.study_file.empty()) {
    g.study_file = find_study_file(g.study_file);
    values = read_study_file(g.study_file, study_keys, &r.study_text, workload.name);
  }
  if (!g.reproduce.empty()) {
    if (!g.study_file.empty()) throw UsageError("--reproduce takes the run's config from its file: drop --study");
    for (const auto& k : study_keys) {
      if (vm.count(k)) {
        throw UsageError("--reproduce takes every run key from the run file: drop --" + k +
                         " (a changed run is not a reproduction; to vary it, run a study)");
      }
    }
    r.stored = read_stored_run(g.reproduce, workload.name, keys);
    if (!g.device_given) g.device = reference_device(g.reproduce, r.stored);
    values = r.stored.values;
    values.emplace_back("name", "reproduce-" + r.stored.run_id);
    r.study_text = r.stored.study_text;
    g.force = true;  // train it again even if an earlier reproduction is there
  }
  for (const auto& k : study_keys) {
    if (!vm.count(k)) continue;
    const std::string v = vm[k].as<std::string>();
    auto it = std::find_if(values.begin(), values.end(), [&](const auto& kv) { return kv.first == k; });
    if (it != values.end()) {
      it->second = v;
    } else {
      values.emplace_back(k, v);
    }
  }
  set_axes(r, values, workload);
  // A reproduction is a study of one run: its file is written and compared with the reference.
  r.study_mode = !g.study_file.empty() || vm.count("output") || !r.swept.empty() || g.dry_run || g.rebuild_index ||
                 !g.reproduce.empty();
  const bool name_given = !r.name.empty();
  if (!name_given) r.name = g.study_file.empty() ? workload.name : fs::path(g.study_file).stem().string();
  check_study_name(r.name, name_given ? "" : g.study_file);
  r.study_dir = (fs::path(g.output) / r.name).string();
  return r;
}

}  // namespace dpstudy
