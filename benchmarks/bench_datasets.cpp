// Dataset loading throughput, in MB/s of decompressed data (Google Benchmark's
// bytes_per_second) and images/s. The real Fashion-MNIST training set is read
// from Debian's dataset-fashion-mnist (gzip, as shipped); fixtures of the same
// size compare plain and gzip files and show what hashing costs.
//
//   build/benchmarks/dpstudy-bench-datasets [--benchmark_filter=...]
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "dpstudy/dataset.hpp"
#include "dpstudy/file_io.hpp"
#include "dpstudy/fixtures.hpp"
#include "dpstudy/sha256.hpp"

using namespace dpstudy;

namespace {

void report(benchmark::State& state, const Dataset& d) {
  std::int64_t bytes = 0;
  for (const auto& f : d.files) bytes += std::int64_t(f.bytes);
  state.SetBytesProcessed(state.iterations() * bytes);
  state.SetItemsProcessed(state.iterations() * d.size());
}

void BM_LoadFashionMnistTrain(benchmark::State& state) {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  std::error_code ec;
  if (!std::filesystem::exists(dir + "/train-images-idx3-ubyte.gz", ec)) {
    state.SkipWithError("Fashion-MNIST not installed (apt-get install dataset-fashion-mnist)");
    return;
  }
  Dataset d;
  for (auto _ : state) {
    d = load_dataset("fashion-mnist", Split::train, {dir});
    benchmark::DoNotOptimize(d.images.data());
  }
  report(state, d);
}
BENCHMARK(BM_LoadFashionMnistTrain)->Unit(benchmark::kMillisecond)->UseRealTime();

// Generated images ($DPSTUDY_BENCH_IMAGES, default 60,000 as in the real
// training set), written once per process, plain (arg 0) or gzip (1).
const std::string& fixture_dir(bool gzip) {
  static std::string dirs[2];
  std::string& dir = dirs[gzip];
  if (dir.empty()) {
    dir = (std::filesystem::path(temp_folder()) / ("dpstudy-bench-" + std::to_string(getpid()) +
                                                     (gzip ? "-gz" : "-plain"))).string();
    const char* n = std::getenv("DPSTUDY_BENCH_IMAGES");
    write_fixtures(dir, {n ? std::atoll(n) : 60000, 10, 1, gzip});
    std::atexit([] {
      for (const auto& d : dirs) if (!d.empty()) remove_tree(d);
    });
  }
  return dir;
}

void BM_LoadFixtureMnistTrain(benchmark::State& state) {
  const std::string& dir = fixture_dir(state.range(0) != 0);
  Dataset d;
  for (auto _ : state) {
    d = load_dataset("mnist", Split::train, {dir});
    benchmark::DoNotOptimize(d.images.data());
  }
  report(state, d);
  state.SetLabel(state.range(0) ? "gzip" : "plain");
}
BENCHMARK(BM_LoadFixtureMnistTrain)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Sha256(benchmark::State& state) {
  std::vector<std::uint8_t> data(std::size_t(state.range(0)), 0x5a);
  for (auto _ : state) benchmark::DoNotOptimize(Sha256::of(data.data(), data.size()));
  state.SetBytesProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_Sha256)->Arg(1 << 24)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
