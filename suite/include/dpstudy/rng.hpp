// A small seeded random number generator whose output is the same on every
// platform and standard library (std:: distributions are not), for everything
// that must be reproducible bit for bit: shard assignment, samplers, fixtures.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace dpstudy {

// SplitMix64 (Steele, Lea, Flood 2014).
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  // A generator for stream `stream` of `seed`, independent of other streams:
  // workers, owners and purposes each get their own.
  static Rng stream(std::uint64_t seed, std::uint64_t stream) {
    Rng mix(seed ^ (0x9e3779b97f4a7c15ull * (stream + 1)));
    return Rng(mix.next());
  }
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n); the modulo bias is below 2^-40 for the n used here.
  std::uint64_t below(std::uint64_t n) { return next() % n; }
  std::uint64_t state() const { return state_; }

  // Fisher-Yates shuffle.
  template <typename T>
  void shuffle(std::vector<T>& v) {
    for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[below(i)]);
  }

 private:
  std::uint64_t state_;
};

}  // namespace dpstudy
