// A workload executable's command line and study file, read into a Request.
#include <boost/program_options.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <thread>

#include "dpstudy/build_info.hpp"
#include "dpstudy/error.hpp"
#include "dpstudy/option_errors.hpp"
#include "dpstudy/options.hpp"
#include "dpstudy/runtime_info.hpp"
#include "dpstudy/workload.hpp"
#include "job.hpp"

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace dpstudy {
namespace {

using Sections = std::vector<const po::options_description*>;

struct Descriptions {
  po::options_description general{"General"}, study{"Study (docs/studies.md)"},
      search{"Metaparameter search (docs/studies.md)"},
      speed{"Throughput mode (docs/performance.md); Google Benchmark's --benchmark_* flags apply"};
};

void describe(Descriptions& d, JobOptions& g) {
  d.general.add_options()("help,h", "show this help")(
      "version", "print the version and the features of this build (MPI, CUDA), then exit")(
      "data_dir", po::value(&g.data_dir), "look here first for datasets (see docs/datasets.md)")(
      "verify_data", po::bool_switch(&g.verify_data),
      "train only on the official dataset files: each file's size and SHA-256 checked against the built-in "
      "manifest (datasets/manifest.tsv; the size alone where it records no SHA-256 yet) when it is loaded")(
      "threads", po::value(&g.threads)->default_value(0),
      "threads per process (0: the cores it may run on; under mpirun the node's cores shared among its "
      "processes, at most the cores a process is bound to). The bits depend on it only where a process has "
      "fewer workers than threads (--parallel, docs/engine.md)")(
      "parallel", po::value(&g.parallel)->default_value("auto"),
      "how a process uses its threads: workers (its workers side by side, one thread each: the bits do not "
      "depend on --threads), operations (one worker at a time, each operation on all threads), auto (workers "
      "when the process has at least as many workers as threads). On a GPU: workers (each on a CUDA stream of "
      "its own), operations (one stream), auto (workers with 2 or more); the same bits (docs/engine.md, docs/gpu.md)")(
      "cuda_graphs", po::value(&g.cuda_graphs)->default_value("off"),
      "whole-step CUDA graphs on a GPU: on (refused, with the reason, for a run that cannot be graphed), "
      "auto (where a run qualifies), off. The same bits either way; recorded in provenance (docs/gpu.md)")(
      "device", po::value(&g.device)->default_value("auto"),
      "auto (a GPU when there is one, each MPI process the GPU of its local rank), cpu or cuda")(
      "deterministic", po::value(&g.deterministic)->default_value(true),
      "deterministic algorithms (ATen, cuDNN); recorded in provenance")("quiet", po::bool_switch(&g.quiet),
                                                                        "print only results and errors")(
      "verbose", po::bool_switch(&g.verbose), "also print each run's config and data assignment")(
      "expect_accuracy", po::value(&g.expect_accuracy),
      "correctness check: exit 3 unless every run's final test accuracy is at least this fraction");
  d.study.add_options()("study", po::value(&g.study_file), "study file (INI); the command line wins over it")(
      "reproduce", po::value(&g.reproduce),
      "RUN_FILE.h5: train that run again from the config stored in it, under results/reproduce-<run id>, and "
      "compare every metric bit for bit (exit 4 when any differs)")(
      "name", po::value<std::string>(), "study name (default: the study file's name, or the workload's)")(
      "seeds", po::value<std::string>(), "a count n (seeds 1..n) or a list of seeds")(
      "global_batch", po::value<std::string>(),
      "samples per step over all workers, held while workers are swept: each run's batch_size is global_batch / "
      "workers (not with batch_size)")("exclude", po::value<std::string>(),
                                       "combinations to drop, e.g. \"sync_period=1 & overlap>0; workers=1\"")(
      "output", po::value(&g.output), "results root: <output>/<study>/ (default: results)")(
      "force", po::bool_switch(&g.force), "rerun runs that are already complete")(
      "dry_run", po::bool_switch(&g.dry_run), "print the run list and the estimated cost, run nothing")(
      "dry_run_processes", po::value(&g.dry_run_processes)->default_value(0),
      "with --dry_run: plan for a job of this many processes, as mpirun -n N would (a Slurm allocation's "
      "tasks, from a login node; 0: this job's)")("rebuild_index", po::bool_switch(&g.rebuild_index),
                                                  "rebuild <output>/<study>/index.h5 from the run files")(
      "checkpoint_interval", po::value(&g.checkpoint_interval)->default_value(300),
      "save a running run's full state every this many seconds (0: never)")(
      "checkpoint_steps", po::value(&g.checkpoint_steps)->default_value(0),
      "also every this many steps (0: not by steps)")(
      "procs_per_run", po::value(&g.procs_per_run)->default_value(0),
      "under mpirun: processes per run (0: the largest power of two <= min(workers, processes) dividing workers)")(
      "claim_timeout", po::value(&g.claim_timeout)->default_value(600),
      "several jobs on one study: seconds after which a claim on a run that its job stopped refreshing is "
      "stale and the run is taken over (docs/mpi.md)")(
      "runs_at_once", po::value(&g.runs_at_once)->default_value("1"),
      "runs each process trains at once, each in a thread of its own, every run on one process: N, or auto "
      "(on the CPU one per thread, each run on one thread; on a GPU as many as fit in its memory, from the "
      "first run's peak). Each run's bits are those it has alone (docs/studies.md#runs-at-once)")(
      "placement", po::value(&g.placement)->default_value("dynamic"),
      "under mpirun: dynamic (groups of processes take the next run as they become free) or static (placed "
      "in advance from estimated costs); runs of several sizes: groups of the largest split as its runs "
      "run out (docs/mpi.md)");
  d.speed.add_options()("mode", po::value(&g.mode)->default_value("train"),
                        "train: run the study; throughput: time training steps per sweep point with Google Benchmark")(
      "warmup_steps", po::value(&g.warmup_steps)->default_value(0),
      "throughput: untimed steps before timing (0: one sync period)")(
      "iterations", po::value(&g.iterations)->default_value(0),
      "throughput: timed periods per benchmark (0: Google Benchmark decides; 10 under MPI)")(
      "profile", po::value(&g.profile),
      "throughput: after each benchmark's timed periods, at least 4 more steps under a Kineto trace, written to "
      "this folder as <benchmark>.json; needs a LibTorch with Kineto (docs/performance.md#profiles)");
  d.search.add_options()("search", po::value<std::string>(), "sobol, random or grid: trials per combination")(
      "trials", po::value<std::string>(), "search: trials per combination of the other axes")(
      "search_skip", po::value<std::string>(),
      "sobol: leading points skipped (default 0; Boost's sequence starts at 0.5, not the origin)")(
      "search_seed", po::value<std::string>(), "random: the generator's seed (default 1)")(
      "search_lr", po::value<std::string>(), "LOW:HIGH, log scale")(
      "search_momentum", po::value<std::string>(), "LOW:HIGH, log scale in 1 - momentum")(
      "search_lr_end_factor", po::value<std::string>(), "LOW:HIGH, log scale")(
      "search_weight_decay", po::value<std::string>(), "LOW:HIGH, log scale")(
      "search_lr_decay_steps", po::value<std::string>(), "LOW:HIGH, whole steps");
}

}  // namespace

int runs_at_once_count(const std::string& text) {
  if (text == "auto") return 0;
  if (text.empty() || text.size() > 3 || text.find_first_not_of("0123456789") != std::string::npos) return -1;
  const int n = std::stoi(text);
  return n >= 1 && n <= 256 ? n : -1;
}

namespace {

void check(const JobOptions& g) {
  if (g.mode != "train" && g.mode != "throughput") throw ConfigError("mode", g.mode, "is not one of: train, throughput");
  if (g.procs_per_run < 0) {
    throw ConfigError("procs_per_run", std::to_string(g.procs_per_run), "must be >= 0 (0: the default)");
  }
  if (!(g.checkpoint_interval >= 0) || !std::isfinite(g.checkpoint_interval)) {
    throw ConfigError("checkpoint_interval", to_text(g.checkpoint_interval), "must be a number of seconds >= 0 (0: never)");
  }
  if (g.checkpoint_steps < 0) {
    throw ConfigError("checkpoint_steps", std::to_string(g.checkpoint_steps), "must be >= 0 (0: not by steps)");
  }
  if (!(g.claim_timeout > 0) || !std::isfinite(g.claim_timeout)) {
    throw ConfigError("claim_timeout", to_text(g.claim_timeout), "must be a number of seconds > 0");
  }
  if (g.placement != "dynamic" && g.placement != "static") {
    throw ConfigError("placement", g.placement, "is not one of: dynamic, static");
  }
  if (runs_at_once_count(g.runs_at_once) < 0) {
    throw ConfigError("runs_at_once", g.runs_at_once, "must be a number of runs from 1 to 256, or auto");
  }
  if (g.runs_at_once != "1" && g.placement == "static") {
    throw UsageError("--runs_at_once " + g.runs_at_once +
                     " trains the next run as a thread of a process becomes "
                     "free: it needs --placement dynamic");
  }
  if (g.runs_at_once != "1" && g.mode == "throughput") {
    throw UsageError("--runs_at_once is for studies: --mode throughput times one sweep point at a time");
  }
  if (g.dry_run_processes < 0 || g.dry_run_processes > 1000000) {
    throw ConfigError("dry_run_processes", std::to_string(g.dry_run_processes),
                      "must be a number of processes from 1 to 1000000 (0: this job's)");
  }
  if (g.dry_run_processes > 0 && !g.dry_run) {
    throw UsageError("--dry_run_processes plans a job without running it: it needs --dry_run");
  }
  if (g.dry_run_processes > 1 && !build_info().with_mpi) {
    throw ConfigError("dry_run_processes", std::to_string(g.dry_run_processes),
                      "cannot be: this dpstudy was built without MPI, so its jobs have one process");
  }
  if (g.mode == "throughput" && g.dry_run) {
    throw UsageError("--dry_run does nothing in throughput mode: list its benchmarks with --benchmark_list_tests=true");
  }
  if (g.warmup_steps < 0) throw ConfigError("warmup_steps", std::to_string(g.warmup_steps), "must be >= 0");
  if (g.iterations < 0) throw ConfigError("iterations", std::to_string(g.iterations), "must be >= 0");
  if (!g.profile.empty() && g.mode != "throughput") {
    throw UsageError("--profile traces the steps of throughput mode: it needs --mode throughput");
  }
  if (!g.benchmark_flags.empty() && g.mode != "throughput") {
    throw UsageError("'" + g.benchmark_flags.front() + "' is a Google Benchmark flag: it needs --mode throughput");
  }
  if (g.threads < 0) throw ConfigError("threads", std::to_string(g.threads), "must be >= 0");
  const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  if (g.threads > 4 * cores) {  // OpenMP would start them all, and crawl
    throw ConfigError("threads", std::to_string(g.threads),
                      "is more than 4 threads per core of the " + std::to_string(cores) + " cores here");
  }
  if (g.device != "auto" && g.device != "cpu" && g.device != "cuda") {
    throw ConfigError("device", g.device, "is not one of: auto, cpu, cuda");
  }
  if (g.device == "cuda" && !build_info().with_cuda) {
    throw ConfigError("device", g.device,
                      "is not available: this dpstudy was built with DPSTUDY_WITH_CUDA=OFF (use --device cpu)");
  }
  if (g.expect_given && !(g.expect_accuracy >= 0 && g.expect_accuracy <= 1)) {  // 90 for 90 % fails every run
    throw ConfigError("expect_accuracy", to_text(g.expect_accuracy), "must be a fraction in [0, 1] (0.9 for 90 %)");
  }
}

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
  Descriptions d;
  describe(d, g);
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
  if (vm.count("help")) {
    if (!print) return std::nullopt;
    po::options_description all(prog + " [--key value]...: " + workload.summary);
    all.add(d.general).add(d.study).add(d.search).add(d.speed).add(run_help.description()).add(model_help);
    std::cout << all << "\nDefinitions and formulas: docs/engine.md; studies: docs/studies.md\n";
    return std::nullopt;
  }
  po::notify(vm);
  g.expect_given = vm.count("expect_accuracy") > 0;
  g.threads_given = !vm["threads"].defaulted();
  g.parallel_given = !vm["parallel"].defaulted();
  g.device_given = !vm["device"].defaulted();
  check(g);

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
