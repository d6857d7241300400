#include "dpstudy/cifar10.hpp"

#include <ATen/ATen.h>

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
  // One copy into a tensor, then the label column and the pixel planes are split
  // with tensor ops rather than a per-record loop.
  at::Tensor records = at::empty({n, kCifarRecordBytes}, at::kByte);
  std::memcpy(records.data_ptr<std::uint8_t>(), bytes.data(), bytes.size());
  CifarBatch out;
  out.labels = records.select(1, 0).to(at::kLong);
  out.images = records.narrow(1, 1, kCifarRecordBytes - 1).reshape({n, 3, 32, 32}).contiguous();
  out.file = in.record();
  return out;
}

}  // namespace dpstudy
