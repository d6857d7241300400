// Reader for the IDX format of MNIST and Fashion-MNIST (LeCun et al.): a
// big-endian header (magic 0x0000TTDD: type TT, DD dimensions, then DD sizes)
// followed by the array. Only unsigned-byte arrays (type 0x08) are used.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dpstudy/file_io.hpp"

namespace dpstudy {

struct IdxArray {
  std::vector<std::int64_t> dims;
  std::vector<std::uint8_t> data;  // the array, row-major, `dims`
  FileRecord file;
};

// Reads a whole IDX file (plain or gzip). Throws DataError naming the file on a
// wrong magic number or type, an unexpected number of dimensions, a truncated
// array or bytes after it.
IdxArray read_idx_ubyte(const std::string& path, int expected_ndim);

}  // namespace dpstudy
