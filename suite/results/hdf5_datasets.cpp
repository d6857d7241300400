// The HDF5 layer's datasets (dpstudy/hdf5.hpp): one chunk each under HDF5's
// Fletcher32 and a CRC-32 of its own, written and read whole.
#include <hdf5.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "dpstudy/hdf5.hpp"
#include "hdf5_detail.hpp"

namespace dpstudy::h5 {

using namespace detail;

namespace {

// A transfer of `count` values. HDF5 converts types (variable-length strings
// always) through a buffer of 1 MiB by default, zeroed at every read and
// write; glibc maps a block that size afresh each time, so its page faults
// made up most of an index rewrite (62 ms for 1,000 runs, 12 ms with a buffer
// sized to the column: BM_IndexKept). Longer columns are converted in strips.
hid_t transfer_for(hssize_t count, const std::string& path) {
  const hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
  if (dxpl < 0) fail(path, "dataset transfer properties");
  // At least one value of any type dpstudy reads (a damaged file's long fixed-length
  // string is refused by its type, not by this size); under glibc's mmap threshold.
  const std::size_t bytes = std::size_t(std::clamp<hssize_t>(count * 32, 4096, 65536));
  if (H5Pset_buffer(dxpl, bytes, nullptr, nullptr) < 0) {
    H5Pclose(dxpl);
    fail(path, "cannot size the type conversion buffer");
  }
  return dxpl;
}

void write_dataset(hid_t group, const std::string& path, const std::string& name, hid_t file_type, hid_t mem_type,
                   const void* data, std::size_t rank, const hsize_t* dims, const std::string& unit) {
  hsize_t count = 1;
  for (std::size_t i = 0; i < rank; ++i) count *= dims[i];
  Id space(H5Screate_simple(int(rank), dims, nullptr), H5Sclose, path, "dataspace for " + name);
  // Every dataset carries HDF5's Fletcher32 checksum (one chunk: the whole
  // dataset), so a damaged value is refused on reading, as a damaged header
  // is, instead of being read as another value. (Texts are fixed-length for
  // this: HDF5 takes no filter on variable-length ones.)
  Id dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose, path, "dataset creation properties");
  if (count > 0) {
    check(H5Pset_chunk(dcpl, int(rank), dims), path, "cannot lay out " + name);
    check(H5Pset_fletcher32(dcpl), path, "cannot checksum " + name);
  }
  Id ds(H5Dcreate2(group, name.c_str(), file_type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT), H5Dclose, path,
        "cannot create dataset " + name);
  Id dxpl(transfer_for(hssize_t(count), path), H5Pclose, path, "dataset transfer properties");
  if (count > 0) check(H5Dwrite(ds, mem_type, H5S_ALL, H5S_ALL, dxpl, data), path, "cannot write " + name);
  // The values' own CRC-32 too: a damaged chunk address that lands on zeros
  // reads as zeros, whose Fletcher32 is zero.
  std::uint32_t crc = 0;
  if (H5Tget_class(file_type) == H5T_STRING) {  // fixed-length (Group::write)
    const std::size_t width = H5Tget_size(file_type);
    for (hsize_t i = 0; i < count; ++i) {
      const char* text = static_cast<const char*>(data) + i * width;
      crc = crc32_text(crc, text, strnlen(text, width));
    }
  } else {
    crc = values_crc(file_type, mem_type, data, count, path);
  }
  write_attr(ds, path, "crc32", H5T_STD_U32LE, H5T_NATIVE_UINT32, &crc);
  if (!unit.empty()) {
    Id t(string_type(), H5Tclose, path, "string type");
    const char* p = unit.c_str();
    write_attr(ds, path, "units", t, t, &p);
  }
}

// Reads all of `ds` into `buf`. Not for variable-length strings: a second
// read without the checksum would follow their damaged references.
void read_checked(hid_t ds, hid_t mem_type, hid_t dxpl, void* buf, const std::string& path, const std::string& shown) {
  if (H5Dread(ds, mem_type, H5S_ALL, H5S_ALL, dxpl, buf) >= 0) return;
  // Read again without the checksum: if that reads, the values are damaged.
  // (HDF5 1.10 says so in its error stack, 1.14 only that a filter failed.)
  const std::string stack = take_stack();
  if (H5Pset_edc_check(dxpl, H5Z_DISABLE_EDC) >= 0 && H5Dread(ds, mem_type, H5S_ALL, H5S_ALL, dxpl, buf) >= 0) {
    throw Hdf5Error(path, "cannot read " + shown + ": its values do not match their checksum (a damaged file)");
  }
  take_stack();
  throw Hdf5Error(path, "cannot read " + shown + (stack.empty() ? "" : " (HDF5: " + stack + ")"));
}

// `shown`: the dataset's path in the file, for errors.
template <typename T>
std::vector<T> read_numbers(hid_t group, const std::string& path, const std::string& name, const std::string& shown,
                            hid_t mem_type) {
  Id ds(H5Dopen2(group, name.c_str(), H5P_DEFAULT), H5Dclose, path, "no dataset " + shown);
  Id space(H5Dget_space(ds), H5Sclose, path, "dataspace of " + shown);
  const hssize_t n = H5Sget_simple_extent_npoints(space);
  if (n < 0) fail(path, "cannot size " + shown);
  if (n > 0) check_chunks(ds, space, path, shown);
  std::vector<T> v(static_cast<std::size_t>(n));
  Id dxpl(transfer_for(n, path), H5Pclose, path, "dataset transfer properties");
  if (n > 0) read_checked(ds, mem_type, dxpl, v.data(), path, shown);
  check_values_crc(ds, path, shown, mem_type, v.data(), hsize_t(n), dxpl);
  return v;
}

void reclaim_strings(hid_t mem, hid_t space, std::vector<char*>& ptrs) {
  if (ptrs.empty()) return;
  // H5Dvlen_reclaim is deprecated since 1.12 (absent from builds without deprecated symbols).
#if H5_VERSION_GE(1, 12, 0)
  H5Treclaim(mem, space, H5P_DEFAULT, ptrs.data());
#else
  H5Dvlen_reclaim(mem, space, H5P_DEFAULT, ptrs.data());
#endif
}

}  // namespace

void Group::write(const std::string& name, const std::vector<double>& v, const std::string& unit) {
  const auto held = hold();
  const hsize_t dims[1] = {v.size()};
  write_dataset(hid_t(id_), path_, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, one_nan(v).data(), 1, dims, unit);
}

void Group::write(const std::string& name, const std::vector<std::int64_t>& v, const std::string& unit) {
  const auto held = hold();
  const hsize_t dims[1] = {v.size()};
  write_dataset(hid_t(id_), path_, name, H5T_STD_I64LE, H5T_NATIVE_INT64, v.data(), 1, dims, unit);
}

void Group::write(const std::string& name, const std::vector<std::int32_t>& v, const std::string& unit) {
  const auto held = hold();
  const hsize_t dims[1] = {v.size()};
  write_dataset(hid_t(id_), path_, name, H5T_STD_I32LE, H5T_NATIVE_INT32, v.data(), 1, dims, unit);
}

// Text columns are fixed-length strings (each padded with zeros to the
// longest), stored in the dataset's chunk under its Fletcher32 checksum. As
// variable-length strings they lived in a global heap that no checksum covers,
// referenced from the dataset: HDF5 1.10.8 followed a damaged reference out
// of bounds and crashed (test_hdf5_damage.cpp), and HDF5 takes no filter on
// them. h5py reads both kinds as bytes.
void Group::write(const std::string& name, const std::vector<std::string>& v, const std::string& unit) {
  const auto held = hold();
  std::size_t width = 1;
  for (const auto& s : v) width = std::max(width, s.size());
  std::vector<char> padded(v.size() * width, '\0');
  for (std::size_t i = 0; i < v.size(); ++i) std::memcpy(&padded[i * width], v[i].data(), v[i].size());
  Id t(fixed_string_type(width), H5Tclose, path_, "string type");
  const hsize_t dims[1] = {v.size()};
  write_dataset(hid_t(id_), path_, name, t, t, padded.data(), 1, dims, unit);
}

void Group::write_floats(const std::string& name, const float* data, std::int64_t count) {
  const auto held = hold();
  const hsize_t dims[1] = {hsize_t(count)};
  write_dataset(hid_t(id_), path_, name, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, data, 1, dims, "");
}

void Group::write_matrix(const std::string& name, const std::vector<double>& v, std::int64_t rows, std::int64_t cols,
                         const std::string& unit) {
  const auto held = hold();
  if (std::int64_t(v.size()) != rows * cols) throw Hdf5Error(path_, name + ": data does not fill the matrix");
  const hsize_t dims[2] = {hsize_t(rows), hsize_t(cols)};
  write_dataset(hid_t(id_), path_, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, one_nan(v).data(), 2, dims, unit);
}

void Group::write_matrix(const std::string& name, const std::vector<std::int64_t>& v, std::int64_t rows,
                         std::int64_t cols, const std::string& unit) {
  const auto held = hold();
  if (std::int64_t(v.size()) != rows * cols) throw Hdf5Error(path_, name + ": data does not fill the matrix");
  const hsize_t dims[2] = {hsize_t(rows), hsize_t(cols)};
  write_dataset(hid_t(id_), path_, name, H5T_STD_I64LE, H5T_NATIVE_INT64, v.data(), 2, dims, unit);
}

std::vector<double> Group::read_doubles(const std::string& name) const {
  const auto held = hold();
  return read_numbers<double>(hid_t(id_), path_, name, name_ + "/" + name, H5T_NATIVE_DOUBLE);
}

std::vector<float> Group::read_floats(const std::string& name) const {
  const auto held = hold();
  return read_numbers<float>(hid_t(id_), path_, name, name_ + "/" + name, H5T_NATIVE_FLOAT);
}

std::vector<std::int64_t> Group::read_ints(const std::string& name) const {
  const auto held = hold();
  return read_numbers<std::int64_t>(hid_t(id_), path_, name, name_ + "/" + name, H5T_NATIVE_INT64);
}

std::vector<std::string> Group::read_strings(const std::string& name) const {
  const auto held = hold();
  const std::string shown = name_ + "/" + name;
  Id ds(H5Dopen2(hid_t(id_), name.c_str(), H5P_DEFAULT), H5Dclose, path_, "no dataset " + shown);
  Id space(H5Dget_space(ds), H5Sclose, path_, "dataspace of " + shown);
  const hssize_t n = H5Sget_simple_extent_npoints(space);
  if (n < 0) fail(path_, "cannot size " + shown);
  Id type(H5Dget_type(ds), H5Tclose, path_, "type of " + shown);
  Id dxpl(transfer_for(n, path_), H5Pclose, path_, "dataset transfer properties");
  std::vector<std::string> out;
  out.reserve(std::size_t(n));
  if (H5Tis_variable_str(type) > 0) {  // the text columns of earlier builds
    Id mem(string_type(), H5Tclose, path_, "string type");
    std::vector<char*> ptrs(static_cast<std::size_t>(n), nullptr);
    if (n > 0) check(H5Dread(ds, mem, H5S_ALL, H5S_ALL, dxpl, ptrs.data()), path_, "cannot read " + shown);
    for (char* p : ptrs) out.emplace_back(p ? p : "");
    reclaim_strings(mem, space, ptrs);
  } else {
    const std::size_t width = H5Tget_size(type);
    if (H5Tget_class(type) != H5T_STRING || width == 0) throw Hdf5Error(path_, shown + " does not hold texts");
    if (n > 0) check_chunks(ds, space, path_, shown);
    std::vector<char> padded(std::size_t(n) * width);
    if (n > 0) read_checked(ds, type, dxpl, padded.data(), path_, shown);
    for (hssize_t i = 0; i < n; ++i) {
      const char* text = &padded[std::size_t(i) * width];
      out.emplace_back(text, strnlen(text, width));
    }
  }
  std::uint32_t crc = 0;
  for (const std::string& text : out) crc = crc32_text(crc, text);
  check_crc(ds, path_, shown, crc);
  return out;
}

char Group::dataset_kind(const std::string& name) const {
  const auto held = hold();
  Id ds(H5Dopen2(hid_t(id_), name.c_str(), H5P_DEFAULT), H5Dclose, path_, "no dataset " + name);
  Id type(H5Dget_type(ds), H5Tclose, path_, "type of " + name);
  return kind_of(type);
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string t;
  for (const auto n : shape) t += (t.empty() ? "" : " x ") + std::to_string(n);
  return t.empty() ? std::string("no") : t;
}

std::vector<std::int64_t> Group::dataset_shape(const std::string& name, char* kind) const {
  const auto held = hold();
  Id ds(H5Dopen2(hid_t(id_), name.c_str(), H5P_DEFAULT), H5Dclose, path_, "no dataset " + name);
  if (kind) {
    Id type(H5Dget_type(ds), H5Tclose, path_, "type of " + name);
    *kind = kind_of(type);
  }
  Id space(H5Dget_space(ds), H5Sclose, path_, "dataspace of " + name);
  const int rank = H5Sget_simple_extent_ndims(space);
  if (rank < 0) fail(path_, "cannot read the shape of " + name);
  std::vector<hsize_t> dims(std::size_t(rank), 0);
  if (rank > 0) check(H5Sget_simple_extent_dims(space, dims.data(), nullptr), path_, "cannot read the shape of " + name);
  return std::vector<std::int64_t>(dims.begin(), dims.end());
}

std::string Group::dataset_units(const std::string& name) const {
  const auto held = hold();
  Id ds(H5Dopen2(hid_t(id_), name.c_str(), H5P_DEFAULT), H5Dclose, path_, "no dataset " + name);
  if (H5Aexists(ds, "units") <= 0) return "";
  check_texts(ds, path_, name_ + "/" + name);
  Id attr(open_one_value(ds, path_, name, "units"), H5Aclose, path_, "units of " + name);
  Id type(H5Aget_type(attr), H5Tclose, path_, "type of the units of " + name);
  if (kind_of(type) != 's') throw Hdf5Error(path_, "the units attribute of " + name + " is not a string");
  const std::string s = read_string_value(type, [&](hid_t mem, void* buf) { return H5Aread(attr, mem, buf); });
  if (s == "\x01") fail(path_, "cannot read the units of " + name);
  return s;
}

}  // namespace dpstudy::h5
