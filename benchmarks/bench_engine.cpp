// Micro-benchmarks of the engine's hot paths besides the model itself: the batch
// gather every step does, the crop + flip augmentation, and recording a run's
// metrics in HDF5. Figures, not pass/fail (docs/performance.md).
#include <ATen/ATen.h>
#include <benchmark/benchmark.h>

#include <cstdio>
#include <filesystem>

#include "dpstudy/augment.hpp"
#include "dpstudy/file_io.hpp"
#include "dpstudy/hdf5.hpp"
#include "dpstudy/metrics.hpp"
#include "dpstudy/results.hpp"

namespace {

using namespace dpstudy;

// Gathering b images of a 60,000 x 1 x 28 x 28 training tensor by index, as
// Trainer::step does for every worker (index_select into a reused buffer).
void BM_BatchGather(benchmark::State& state) {
  const std::int64_t b = state.range(0);
  at::manual_seed(1);
  const at::Tensor train = at::randn({60000, 1, 28, 28});
  const at::Tensor idx = at::randint(0, 60000, {b}, at::kLong);
  at::Tensor out = at::empty({b, 1, 28, 28});
  for (auto _ : state) {
    at::index_select_out(out, train, 0, idx);
    benchmark::DoNotOptimize(out.data_ptr());
  }
  state.SetItemsProcessed(state.iterations() * b);
  state.SetBytesProcessed(state.iterations() * b * 28 * 28 * 4);
}
BENCHMARK(BM_BatchGather)->Arg(32)->Arg(128)->Arg(1024);

// Random 32 x 32 crops of 4-pixel zero-padded CIFAR images and horizontal flips,
// a whole batch at a time.
void BM_AugmentCropFlip(benchmark::State& state) {
  const std::int64_t b = state.range(0);
  at::manual_seed(1);
  const at::Tensor batch = at::randn({b, 3, 32, 32});
  at::Tensor out = at::empty_like(batch);
  Augmenter aug(7, 0, 4, {-1.99, -1.98, -1.71});
  for (auto _ : state) {
    aug.apply(batch, out);
    benchmark::DoNotOptimize(out.data_ptr());
  }
  state.SetItemsProcessed(state.iterations() * b);
}
BENCHMARK(BM_AugmentCropFlip)->Arg(128)->Arg(1024);

// A run's recorded series written as its run file is (in memory, then one
// write): `steps` training rows of 4 workers, an evaluation every 50 steps.
void BM_RecordMetricsHdf5(benchmark::State& state) {
  const std::int64_t steps = state.range(0);
  const int workers = 4;
  RunResult r;
  for (std::int64_t s = 1; s <= steps; ++s) {
    r.train.step.push_back(s);
    r.train.epoch.push_back(double(s) / 100);
    r.train.loss.push_back(1.0 / double(s));
    r.train.lr.push_back(0.1);
    r.train.samples.push_back(s * 128);
    r.train.time_s.push_back(0.01 * double(s));
    r.train.comm_s.push_back(0.001 * double(s));
    r.train.comm_bytes.push_back(s * 1000);
    for (int w = 0; w < workers; ++w) r.train.worker_loss.push_back(1.0 / double(s + w));
    if (s % 50 == 0) {
      for (auto* v : {&r.eval.epoch, &r.eval.test_loss, &r.eval.test_accuracy, &r.eval.val_loss,
                      &r.eval.val_accuracy, &r.eval.train_loss, &r.eval.worker_divergence}) {
        v->push_back(0.5);
      }
      r.eval.step.push_back(s);
    }
  }
  r.summary.steps = steps;
  const std::string path = (std::filesystem::path(temp_folder()) / "dpstudy-bench-record.h5").string();
  for (auto _ : state) {
    write_hdf5_atomically(path, [&](h5::Group& root) { write_series(root, r, workers); }, "bench");
  }
  std::remove(path.c_str());
  state.SetItemsProcessed(state.iterations() * steps);
  state.counters["steps"] = double(steps);
}
BENCHMARK(BM_RecordMetricsHdf5)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
