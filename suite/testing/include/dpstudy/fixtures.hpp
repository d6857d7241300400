// Small, valid, deterministic MNIST / Fashion-MNIST / CIFAR-10 files for tests.
// Images are class-dependent patterns plus noise, so that a model can learn them.
#pragma once

#include <cstdint>
#include <string>

namespace dpstudy {

struct FixtureOptions {
  std::int64_t train = 600;  // images per training split (CIFAR-10: over 5 batches)
  std::int64_t test = 100;
  std::uint64_t seed = 1;
  bool gzip = true;  // IDX files as .gz (CIFAR-10 batches are always plain)
};

// Writes <dir>/mnist, <dir>/fashion-mnist, <dir>/cifar10 and <dir>/manifest.tsv
// (the fixtures' sizes and SHA-256, in the manifest format). The same options
// give the same bytes.
void write_fixtures(const std::string& dir, const FixtureOptions& options);

}  // namespace dpstudy
