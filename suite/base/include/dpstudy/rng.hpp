// A small seeded random number generator whose output is the same on every
// platform and standard library (std:: distributions are not), for everything
// that must be reproducible bit for bit: shard assignment, samplers, fixtures.
#pragma once

#include <cmath>
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
  // Uniform in [0, 1), 53 bits.
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }
  // Standard normal (Marsaglia's polar method).
  double normal() {
    for (;;) {
      const double u = 2 * uniform() - 1, v = 2 * uniform() - 1, s = u * u + v * v;
      if (s > 0 && s < 1) return u * std::sqrt(-2 * std::log(s) / s);
    }
  }
  // Gamma(shape, 1) (Marsaglia and Tsang 2000); a shape below 1 as
  // Gamma(shape + 1) U^(1 / shape), their remedy for it.
  double gamma(double shape) {
    if (shape < 1) return gamma(shape + 1) * std::pow(uniform(), 1 / shape);
    const double d = shape - 1.0 / 3, c = 1 / std::sqrt(9 * d);
    for (;;) {
      double x, v;
      do {
        x = normal();
        v = 1 + c * x;
      } while (v <= 0);
      v = v * v * v;
      const double u = uniform();
      if (u < 1 - 0.0331 * x * x * x * x || std::log(u) < 0.5 * x * x + d * (1 - v + std::log(v))) return d * v;
    }
  }

  // Fisher-Yates shuffle.
  template <typename T>
  void shuffle(std::vector<T>& v) {
    for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[below(i)]);
  }

 private:
  std::uint64_t state_;
};

}  // namespace dpstudy
