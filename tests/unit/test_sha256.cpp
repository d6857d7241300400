#include <gtest/gtest.h>

#include <string>

#include "dpstudy/sha256.hpp"

using dpstudy::Sha256;

// Test vectors from FIPS 180-4 / NIST CAVP.
TEST(Sha256, KnownVectors) {
  EXPECT_EQ(Sha256::of("", 0), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  // Nothing, from an empty vector whose data() is null (UB in memcpy: fails under -fsanitize=undefined).
  EXPECT_EQ(Sha256::of(nullptr, 0), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256::of("abc", 3), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const std::string two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  EXPECT_EQ(Sha256::of(two_blocks.data(), two_blocks.size()),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, MillionAsInUnevenChunksMatchOneShot) {
  const std::string a(1000000, 'a');
  Sha256 h;
  std::size_t done = 0, chunk = 1;
  while (done < a.size()) {
    const std::size_t n = std::min(chunk, a.size() - done);
    h.update(a.data() + done, n);
    done += n;
    chunk = chunk * 3 + 1;  // crosses block boundaries at many offsets
  }
  const std::string expected = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
  EXPECT_EQ(h.hex_digest(), expected);
  EXPECT_EQ(Sha256::of(a.data(), a.size()), expected);
  // hex_digest() resets the object.
  EXPECT_EQ(h.hex_digest(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}
