// Rewriting a study's index.h5, which a study does after every run: from
// scratch (every run file opened, as `--rebuild_index` does) against the
// StudyIndex a study keeps (only new or changed files opened). Arg: run files
// in the study; each is a run of 8 workers, 2,000 steps and 40 evaluations
// (about 280 KB). And writing a checkpoint-sized file (write_hdf5_atomically):
// Arg: its float values in millions (the MLP's 2-worker checkpoint holds 2.7 M,
// 10.7 MB).
//
//   build/benchmarks/dpstudy-bench-results [--benchmark_filter=...]
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "dpstudy/file_io.hpp"
#include "dpstudy/hdf5.hpp"
#include "dpstudy/results.hpp"

using namespace dpstudy;

namespace {

RunRecord example_run(int i) {
  RunRecord rec;
  char id[17];
  std::snprintf(id, sizeof id, "%016x", 0x1000 + i);
  rec.run_id = id;
  rec.study = "bench";
  rec.workload = "mlp-mnist";
  rec.study_text = "[study]\nname = bench\n";
  rec.workers = 8;
  for (const char* k : {"workers", "sync_period", "batch_size", "epochs", "seed", "data_seed", "eval_every",
                        "block_size", "group_size", "group_sync_period", "local_sgd_from_epoch", "threads"}) {
    rec.config.emplace_back(k, std::int64_t(i % 7 + 1));
  }
  for (const char* k : {"overlap", "lr", "batch_lr_ratio", "momentum", "weight_decay", "warmup_epochs",
                        "goal_error", "sparsity"}) {
    rec.config.emplace_back(k, 0.01 * (i % 13));
  }
  for (const char* k : {"dataset", "model", "overlap_mode", "granularity", "order", "schedule", "scaling"}) {
    rec.config.emplace_back(k, std::string("value"));
  }
  rec.provenance = {{"host", std::string("bench")}};
  RunResult& r = rec.result;
  const int steps = 2000, evals = 40;
  for (int s = 1; s <= steps; ++s) {
    r.train.step.push_back(s);
    r.train.epoch.push_back(s / 100.0);
    r.train.loss.push_back(2.3 / s);
    r.train.lr.push_back(0.1);
    r.train.samples.push_back(256LL * s);
    r.train.time_s.push_back(0.01 * s);
    r.train.comm_s.push_back(0.001 * s);
    r.train.comm_bytes.push_back(4LL * s);
    for (int w = 0; w < rec.workers; ++w) r.train.worker_loss.push_back(2.3 / s + w);
  }
  for (int e = 1; e <= evals; ++e) {
    r.eval.step.push_back(e * steps / evals);
    r.eval.epoch.push_back(e * 0.5);
    for (auto* v : {&r.eval.test_loss, &r.eval.test_accuracy, &r.eval.train_loss, &r.eval.worker_divergence}) {
      v->push_back(1.0 / e);
    }
    r.eval.val_loss.push_back(std::nan(""));
    r.eval.val_accuracy.push_back(std::nan(""));
    r.eval.synced.push_back(1);
  }
  r.summary.final_test_accuracy = 0.9;
  r.summary.steps = steps;
  return rec;
}

// A study folder with `runs` run files, written once per process.
const std::string& study_with(int runs) {
  static std::map<int, std::string> dirs;
  std::string& dir = dirs[runs];
  if (dir.empty()) {
    dir = (std::filesystem::path(temp_folder()) /
           ("dpstudy-bench-index-" + std::to_string(getpid()) + "-" + std::to_string(runs))).string();
    std::error_code ec;
    std::filesystem::create_directories(dir + "/runs", ec);
    if (ec) throw std::runtime_error(dir + "/runs: cannot create: " + ec.message());
    for (int i = 0; i < runs; ++i) {
      const RunRecord rec = example_run(i);
      write_run_file(dir + "/runs/" + rec.run_id + ".h5", rec);
    }
    if (dirs.size() == 1) {
      std::atexit([] {
        for (const auto& [n, d] : dirs) remove_tree(d);
      });
    }
  }
  return dir;
}

void BM_IndexFromScratch(benchmark::State& state) {
  const std::string& dir = study_with(int(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(rebuild_index(dir, "bench", nullptr));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_IndexFromScratch)->Arg(100)->Arg(1000)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_IndexKept(benchmark::State& state) {
  const std::string& dir = study_with(int(state.range(0)));
  StudyIndex index(dir, "bench");
  index.rebuild(nullptr);  // as after the study's earlier runs
  for (auto _ : state) benchmark::DoNotOptimize(index.rebuild(nullptr));
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.counters["files_read"] = double(index.files_read());
}
BENCHMARK(BM_IndexKept)->Arg(100)->Arg(1000)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_CheckpointSizedWrite(benchmark::State& state) {
  // Params and momentum of two workers, as save_checkpoint writes them.
  const std::int64_t per_dataset = state.range(0) * 1000000 / 4;
  const std::vector<float> values(std::size_t(per_dataset), 0.25f);
  const std::string path = (std::filesystem::path(temp_folder()) /
                            ("dpstudy-bench-ckpt-" + std::to_string(getpid()) + ".h5")).string();
  for (auto _ : state) {
    write_hdf5_atomically(path, [&](h5::Group& root) {
      for (const char* name : {"params0", "momentum0", "params1", "momentum1"}) {
        root.write_floats(name, values.data(), per_dataset);
      }
    }, "bench");
  }
  ::unlink(path.c_str());
  state.SetBytesProcessed(state.iterations() * state.range(0) * 4000000);
}
BENCHMARK(BM_CheckpointSizedWrite)->Arg(3)->Arg(25)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
