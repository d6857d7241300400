// SHA-256 (FIPS 180-4), incremental. Used for dataset checksums, which are
// taken over the decompressed bytes so that a recompressed copy still verifies.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace dpstudy {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, std::size_t size);
  // Finishes the hash and returns 64 lowercase hex digits; the object is then reset.
  std::string hex_digest();

  static std::string of(const void* data, std::size_t size);

 private:
  void compress(const std::uint8_t* block);
  std::array<std::uint32_t, 8> state_;
  std::array<std::uint8_t, 64> buffer_;
  std::size_t buffered_ = 0;
  std::uint64_t total_bytes_ = 0;
};

}  // namespace dpstudy
