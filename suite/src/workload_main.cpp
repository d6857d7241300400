#include "dpstudy/workload.hpp"

#include <ATen/Parallel.h>
#include <boost/program_options.hpp>

#include <cmath>
#include <cstdio>
#include <iostream>

#include "dpstudy/build_info.hpp"
#include "dpstudy/communicator.hpp"
#include "dpstudy/dataset.hpp"
#include "dpstudy/error.hpp"
#include "dpstudy/options.hpp"
#include "dpstudy/progress.hpp"
#include "dpstudy/runtime_info.hpp"
#include "dpstudy/trainer.hpp"

namespace po = boost::program_options;

namespace dpstudy {
namespace {

void print_header(const Workload& w, const RunConfig& c) {
  const BuildInfo b = build_info();
  const BlasInfo blas = blas_info();
  std::printf("# dpstudy-%s, dpstudy %s (commit %.12s), LibTorch %s\n", w.name.c_str(), b.version.c_str(),
              b.git_commit.c_str(), torch_version().c_str());
  std::printf("# BLAS: %s, %s; intra-op threads %d\n", blas.kind.c_str(), blas.library.c_str(), at::get_num_threads());
  if (blas.slow) std::printf("# WARNING: the reference BLAS is active; training runs about 15x slower\n");
  std::printf("# config:");
  for (const auto& [k, v] : c.key_values()) std::printf(" %s=%s", k.c_str(), v.c_str());
  std::printf("\n");
}

void print_result(const RunResult& r) {
  const RunSummary& s = r.summary;
  std::printf("# result: %s\n", to_string(s.status).c_str());
  std::printf("# %-24s %14s  %s\n", "metric", "value", "unit");
  auto row = [](const char* name, double v, const char* unit) { std::printf("  %-24s %14.6g  %s\n", name, v, unit); };
  row("final_test_accuracy", s.final_test_accuracy, "fraction");
  row("best_test_accuracy", s.best_test_accuracy, "fraction");
  row("final_test_loss", s.final_test_loss, "nats");
  row("final_val_accuracy", s.final_val_accuracy, "fraction");
  row("steps", double(s.steps), "steps");
  row("steps_per_epoch", double(s.steps_per_epoch), "steps");
  row("wall_time", s.wall_time_s, "s");
  row("samples_per_s", s.samples_per_s, "samples/s");
  row("comm_time", r.train.comm_s.empty() ? 0 : r.train.comm_s.back(), "s");
  row("parameter_averagings", double(r.syncs.step.size()), "count");
  row("parameters", double(s.parameters), "count");
}

}  // namespace

int workload_main(int argc, char** argv, const Workload& workload) {
  const std::string prog = "dpstudy-" + workload.name;
  try {
    RunOptions run_options(workload.defaults);
    std::string data_dir;
    int threads = 0;
    double expect_accuracy = -1;
    bool quiet = false;
    po::options_description general("General");
    general.add_options()("help,h", "show this help")(
        "data_dir", po::value(&data_dir), "look here first for datasets (see docs/datasets.md)")(
        "threads", po::value(&threads)->default_value(0), "intra-op threads (0: LibTorch's default)")(
        "quiet", po::bool_switch(&quiet), "print only the result table")(
        "expect_accuracy", po::value(&expect_accuracy),
        "correctness check: exit 3 unless the final test accuracy is at least this fraction");
    po::options_description model("Model");
    if (workload.model_options) workload.model_options(model);
    po::options_description all(prog + " [--key value]...: " + workload.summary);
    all.add(general);
    all.add(run_options.description());
    all.add(model);
    po::variables_map vm;
    po::store(po::parse_command_line(argc, argv, all), vm);
    if (vm.count("help")) {
      std::cout << all << "\nFormulas and definitions: docs/engine.md\n";
      return 0;
    }
    po::notify(vm);
    const RunConfig config = run_options.resolve();
    if (threads < 0) throw ConfigError("threads", std::to_string(threads), "must be >= 0");
    if (threads > 0) at::set_num_threads(threads);
    const DatasetSpec& spec = dataset_spec(config.dataset);
    const ModelFactory factory = workload.make_model(spec);
    if (!quiet) print_header(workload, config);

    LoadOptions load;
    load.data_dir = data_dir;
    const Dataset train = load_dataset(config.dataset, Split::train, load);
    const Dataset test = load_dataset(config.dataset, Split::test, load);
    const TrainingData data = prepare_data(train, test);
    InProcessCommunicator comm(config.workers);
    ConsoleProgress console;
    const RunResult result = train_run(config, factory, data, comm, quiet ? nullptr : &console);
    print_result(result);
    if (vm.count("expect_accuracy")) {
      const double acc = result.summary.final_test_accuracy;
      const bool ok = result.summary.status == RunStatus::completed && acc >= expect_accuracy;
      std::printf("# check: final test accuracy %.4f %s %.4f: %s\n", acc, ok ? ">=" : "<", expect_accuracy,
                  ok ? "ok" : "FAILED");
      return ok ? 0 : 3;
    }
    return 0;
  } catch (const po::error& e) {
    std::fprintf(stderr, "%s: error: %s\n(see %s --help)\n", prog.c_str(), e.what(), prog.c_str());
    return 2;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "%s: error: %s\n(see %s --help)\n", prog.c_str(), e.what(), prog.c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", prog.c_str(), e.what());
    return 1;
  }
}

}  // namespace dpstudy
