#include "dpstudy/idx.hpp"

#include <cstdio>

#include "dpstudy/error.hpp"

namespace dpstudy {

IdxArray read_idx_ubyte(const std::string& path, int expected_ndim) {
  InputFile in(path);
  std::uint8_t magic[4];
  in.read_exact(magic, 4, "IDX header (magic number)");
  char found[16];
  std::snprintf(found, sizeof found, "0x%02X%02X%02X%02X", magic[0], magic[1], magic[2], magic[3]);
  char wanted[16];
  std::snprintf(wanted, sizeof wanted, "0x000008%02X", unsigned(expected_ndim));
  if (magic[0] != 0 || magic[1] != 0 || magic[2] != 0x08 || magic[3] != expected_ndim) {
    std::string why = "wrong magic number " + std::string(found) + ", expected " + wanted +
                      " (IDX unsigned bytes, " + std::to_string(expected_ndim) + " dimensions)";
    if (magic[0] == 0x1f && magic[1] == 0x8b) why += "; the gzip stream inside is corrupt";
    throw DataError(path, why);
  }
  std::vector<std::uint8_t> header(4 * std::size_t(expected_ndim));
  in.read_exact(header.data(), header.size(), "IDX header (dimensions)");
  IdxArray out;
  std::int64_t count = 1;
  for (int d = 0; d < expected_ndim; ++d) {
    const std::uint32_t n = read_be32(header.data() + 4 * d);
    if (n == 0 || n > (1u << 30)) {
      throw DataError(path, "dimension " + std::to_string(d) + " is " + std::to_string(n) +
                                ", expected 1 .. 2^30");
    }
    out.dims.push_back(std::int64_t(n));
    count *= std::int64_t(n);
  }
  if (count > (std::int64_t(1) << 36)) throw DataError(path, "array is implausibly large");
  out.data.resize(std::size_t(count));
  in.read_exact(out.data.data(), std::size_t(count),
                "data (the header declares " + std::to_string(count) + " bytes)");
  if (!in.at_end()) {
    throw DataError(path, "has bytes after the " + std::to_string(count) +
                              " the header declares (wrong dimensions in the header?)");
  }
  out.file = in.record();
  return out;
}

}  // namespace dpstudy
