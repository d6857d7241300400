#include "dpstudy/cifar10.hpp"

#include <cstring>

#include "dpstudy/error.hpp"

namespace dpstudy {

CifarBatch read_cifar10_batch(const std::string& path, int num_classes) {
  InputFile in(path);
  std::vector<std::uint8_t> bytes = in.read_rest();
  if (bytes.empty()) throw DataError(path, "is empty, expected 3073-byte CIFAR-10 records");
  if (bytes.size() % kCifarRecordBytes != 0) {
    throw DataError(path, "size " + std::to_string(bytes.size()) + " bytes is not a whole number of " +
                              std::to_string(kCifarRecordBytes) +
                              "-byte CIFAR-10 records (truncated or not a CIFAR-10 binary batch); " +
                              std::to_string(bytes.size() / kCifarRecordBytes) +
                              " whole records and " + std::to_string(bytes.size() % kCifarRecordBytes) +
                              " bytes left over");
  }
  const std::int64_t n = std::int64_t(bytes.size() / kCifarRecordBytes);
  for (std::int64_t i = 0; i < n; ++i) {
    const int label = bytes[std::size_t(i) * kCifarRecordBytes];
    if (label >= num_classes) {
      throw DataError(path, "label " + std::to_string(label) + " of record " + std::to_string(i) +
                                " is out of range, expected 0.." + std::to_string(num_classes - 1));
    }
  }
  CifarBatch out;
  constexpr std::size_t pixels = kCifarRecordBytes - 1;
  out.labels.resize(std::size_t(n));
  out.images.resize(std::size_t(n) * pixels);
  for (std::size_t i = 0; i < std::size_t(n); ++i) {
    const std::uint8_t* record = bytes.data() + i * kCifarRecordBytes;
    out.labels[i] = record[0];
    std::memcpy(out.images.data() + i * pixels, record + 1, pixels);
  }
  out.file = in.record();
  return out;
}

}  // namespace dpstudy
