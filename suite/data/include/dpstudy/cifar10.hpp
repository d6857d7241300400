// Reader for the CIFAR-10 binary version (Krizhevsky 2009): files of 3073-byte
// records, one label byte then 3072 pixel bytes (1024 red, 1024 green, 1024 blue,
// each plane row-major 32x32). data_batch_1..5.bin hold the 50,000 training
// images, test_batch.bin the 10,000 test images.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dpstudy/file_io.hpp"

namespace dpstudy {

constexpr int kCifarRecordBytes = 1 + 3 * 32 * 32;

struct CifarBatch {
  std::vector<std::uint8_t> images;  // [N, 3, 32, 32], row-major
  std::vector<std::int64_t> labels;  // [N]
  FileRecord file;
};

// Throws DataError naming the file when it is empty, not a whole number of
// records, or holds a label outside 0..num_classes-1.
CifarBatch read_cifar10_batch(const std::string& path, int num_classes = 10);

}  // namespace dpstudy
