// The HDF5 layer's own parts, shared by its four files (hdf5.cpp: the error
// layer, groups and attributes; hdf5_datasets.cpp; hdf5_file.cpp;
// hdf5_integrity.cpp: the checks that refuse a damaged file). Only they
// include it: the rest of dpstudy sees dpstudy/hdf5.hpp, without hdf5.h.
#pragma once

#include <hdf5.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

namespace dpstudy::h5::detail {

// HDF5 as Debian and Spack build it by default is not thread-safe, and a
// process may train several runs at once (--runs_at_once, each in a thread of
// its own): every entry of this layer holds the process's one lock while it
// calls the library. Recursive, as entries call entries.
std::unique_lock<std::recursive_mutex> hold();

// The error layer: every failing HDF5 call becomes an Hdf5Error naming the
// file, what was being done and HDF5's error stack (which HDF5 would
// otherwise print itself: silence_library).
void silence_library();
std::string take_stack();  // HDF5's error stack in words, cleared
[[noreturn]] void fail(const std::string& path, const std::string& what);
void check(herr_t rc, const std::string& path, const std::string& what);

// Owns one identifier and closes it with the right function.
class Id {
 public:
  Id(hid_t id, herr_t (*close)(hid_t), const std::string& path, const std::string& what) : id_(id), close_(close) {
    if (id < 0) fail(path, what);
  }
  ~Id() { close_(id_); }
  Id(const Id&) = delete;
  operator hid_t() const { return id_; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

hid_t string_type();                         // variable-length UTF-8
hid_t fixed_string_type(std::size_t width);  // zero-padded UTF-8
char kind_of(hid_t type);                    // 'i', 'f', 's', or '?'
// A text read by `read` as `obj_type` gives it (fixed or variable length); "\x01" if it fails.
std::string read_string_value(hid_t obj_type, const std::function<herr_t(hid_t, void*)>& read);

// Attributes: one value each.
void write_attr(hid_t obj, const std::string& path, const std::string& name, hid_t file_type, hid_t mem_type,
                const void* data);
std::vector<std::string> attribute_names(hid_t obj, const std::string& path, const std::string& shown);
hid_t open_one_value(hid_t group, const std::string& path, const std::string& group_name, const std::string& name);

// A NaN's sign and payload bits come from which NaN operand an addition
// passed on, and a + b and b + a pass on different ones: the sums of
// different process layouts agree bit for bit where finite, not in their
// NaNs. Metrics store the one quiet NaN, so that their files agree too.
inline double one_nan(double v) { return std::isnan(v) ? std::numeric_limits<double>::quiet_NaN() : v; }
inline std::vector<double> one_nan(std::vector<double> v) {
  for (double& x : v) x = one_nan(x);
  return v;
}

// hdf5_integrity.cpp. `path`: the file, `shown`: the object's path in it, for errors.
// The attribute holding the checksum of an object's text attributes (check_texts).
constexpr const char* kTextCrc = "text_crc32";
std::uint32_t crc32_update(std::uint32_t crc, const void* data, std::size_t n);
std::uint32_t crc32_text(std::uint32_t crc, const char* s, std::size_t n);
std::uint32_t crc32_text(std::uint32_t crc, const std::string& s);
void check_texts(hid_t obj, const std::string& path, const std::string& shown);
void seal_tree(hid_t group, const std::string& path, const std::string& shown);
std::uint32_t values_crc(hid_t file_type, hid_t mem_type, const void* data, hsize_t count, const std::string& path);
void check_crc(hid_t ds, const std::string& path, const std::string& shown, std::uint32_t crc);
void check_values_crc(hid_t ds, const std::string& path, const std::string& shown, hid_t mem_type, const void* values,
                      hsize_t n, hid_t dxpl);
void check_chunks(hid_t ds, hid_t space, const std::string& path, const std::string& shown);
void mend_superblock_checksum(std::vector<char>& image);
void check_global_heaps(const std::string& path);

}  // namespace dpstudy::h5::detail
