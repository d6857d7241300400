#include "dpstudy/hdf5.hpp"

#include <fcntl.h>
#include <hdf5.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

namespace dpstudy::h5 {
namespace {

// HDF5 prints its error stack itself unless told not to; we collect it instead.
void silence_library() {
  static const bool done = [] {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return true;
  }();
  (void)done;
}

herr_t collect(unsigned n, const H5E_error2_t* e, void* out) {
  auto& s = *static_cast<std::string*>(out);
  if (n < 3) {  // walked upward: the innermost frames, where the cause is
    s += std::string(n ? "; " : "") + (e->func_name ? e->func_name : "?") + ": " + (e->desc ? e->desc : "?");
  }
  return 0;
}

// HDF5's error stack in words, cleared.
std::string take_stack() {
  std::string stack;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, collect, &stack);
  H5Eclear2(H5E_DEFAULT);
  return stack;
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  const std::string stack = take_stack();
  throw Hdf5Error(path, what + (stack.empty() ? "" : " (HDF5: " + stack + ")"));
}

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

void check(herr_t rc, const std::string& path, const std::string& what) {
  if (rc < 0) fail(path, what);
}

hid_t string_type() {
  hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, H5T_VARIABLE);
  H5Tset_cset(t, H5T_CSET_UTF8);
  return t;
}

hid_t fixed_string_type(std::size_t width) {
  hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, width);
  H5Tset_strpad(t, H5T_STR_NULLPAD);
  H5Tset_cset(t, H5T_CSET_UTF8);
  return t;
}

// zlib's CRC-32 (what Python's zlib.crc32 computes), continued from `crc`.
std::uint32_t crc32_update(std::uint32_t crc, const void* data, std::size_t n) {
  const auto* p = static_cast<const Bytef*>(data);
  while (n > 0) {
    const auto step = uInt(std::min<std::size_t>(n, std::size_t(1) << 30));
    crc = std::uint32_t(::crc32(uLong(crc), p, step));
    p += step;
    n -= step;
  }
  return crc;
}

// The attribute holding the checksum of an object's text attributes (check_texts).
constexpr const char* kTextCrc = "text_crc32";

// Texts are checksummed as each one's UTF-8 bytes followed by a zero byte.
std::uint32_t crc32_text(std::uint32_t crc, const char* s, std::size_t n) {
  return crc32_update(crc32_update(crc, s, n), "", 1);
}
std::uint32_t crc32_text(std::uint32_t crc, const std::string& s) { return crc32_text(crc, s.data(), s.size()); }

}  // namespace

Group::Group(hid id, std::string path, std::string name) : id_(id), path_(std::move(path)), name_(std::move(name)) {}

Group::~Group() {
  if (id_ >= 0) H5Gclose(hid_t(id_));
}

Group::Group(Group&& o) noexcept : id_(o.id_), path_(std::move(o.path_)), name_(std::move(o.name_)) { o.id_ = -1; }

Group Group::create_group(const std::string& name) {
  const hid_t g = H5Gcreate2(hid_t(id_), name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (g < 0) fail(path_, "cannot create group " + name);
  return Group(g, path_, name_ + "/" + name);
}

Group Group::open_group(const std::string& name) const {
  const hid_t g = H5Gopen2(hid_t(id_), name.c_str(), H5P_DEFAULT);
  if (g < 0) fail(path_, "no group " + name + " in " + (name_.empty() ? "/" : name_));
  return Group(g, path_, name_ + "/" + name);
}

bool Group::has(const std::string& name) const { return H5Lexists(hid_t(id_), name.c_str(), H5P_DEFAULT) > 0; }

bool Group::is_group(const std::string& name) const {
  Id obj(H5Oopen(hid_t(id_), name.c_str(), H5P_DEFAULT), H5Oclose, path_, "cannot open " + name_ + "/" + name);
  return H5Iget_type(obj) == H5I_GROUP;
}

// Both listings walk the names in the order they are stored and sort them here:
// listing in name order builds a table of every entry, and when an entry of a
// damaged file fails to decode, HDF5 (1.10.8 and 1.14.5 alike) frees the
// table's unfilled entries and crashes (found by tools/fuzz-inputs under
// AddressSanitizer). Walking them returns the error instead.
std::vector<std::string> Group::members() const {
  std::vector<std::string> names;
  auto cb = [](hid_t, const char* n, const H5L_info_t*, void* out) -> herr_t {
    static_cast<std::vector<std::string>*>(out)->push_back(n);
    return 0;
  };
  hsize_t idx = 0;
  check(H5Literate(hid_t(id_), H5_INDEX_NAME, H5_ITER_NATIVE, &idx, cb, &names), path_, "cannot list " + name_);
  std::sort(names.begin(), names.end());
  return names;
}

namespace {

void write_attr(hid_t obj, const std::string& path, const std::string& name, hid_t file_type, hid_t mem_type,
                const void* data) {
  if (H5Aexists(obj, name.c_str()) > 0) check(H5Adelete(obj, name.c_str()), path, "cannot replace attribute " + name);
  Id space(H5Screate(H5S_SCALAR), H5Sclose, path, "dataspace");
  Id attr(H5Acreate2(obj, name.c_str(), file_type, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose, path,
          "cannot create attribute " + name);
  check(H5Awrite(attr, mem_type, data), path, "cannot write attribute " + name);
}

}  // namespace

void Group::set(const std::string& name, const std::string& value) {
  Id t(string_type(), H5Tclose, path_, "string type");
  const char* p = value.c_str();
  write_attr(hid_t(id_), path_, name, t, t, &p);
}

namespace {

// A NaN's sign and payload bits come from which NaN operand an addition
// passed on, and a + b and b + a pass on different ones: the sums of
// different process layouts agree bit for bit where finite, not in their
// NaNs. Metrics store the one quiet NaN, so that their files agree too.
double one_nan(double v) { return std::isnan(v) ? std::numeric_limits<double>::quiet_NaN() : v; }

std::vector<double> one_nan(std::vector<double> v) {
  for (double& x : v) x = one_nan(x);
  return v;
}

}  // namespace

void Group::set(const std::string& name, std::int64_t value) {
  write_attr(hid_t(id_), path_, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &value);
}

void Group::set(const std::string& name, double value) {
  value = one_nan(value);
  write_attr(hid_t(id_), path_, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value);
}

bool Group::has_attr(const std::string& name) const { return H5Aexists(hid_t(id_), name.c_str()) > 0; }

namespace {

std::vector<std::string> attribute_names(hid_t obj, const std::string& path, const std::string& shown) {
  std::vector<std::string> names;
  auto cb = [](hid_t, const char* n, const H5A_info_t*, void* out) -> herr_t {
    static_cast<std::vector<std::string>*>(out)->push_back(n);
    return 0;
  };
  hsize_t idx = 0;
  check(H5Aiterate2(obj, H5_INDEX_NAME, H5_ITER_NATIVE, &idx, cb, &names), path, "cannot list attributes of " + shown);
  std::sort(names.begin(), names.end());  // as members()
  return names;
}

}  // namespace

std::vector<std::string> Group::attr_names() const {
  std::vector<std::string> names = attribute_names(hid_t(id_), path_, name_);
  // The texts' checksum is this layer's, not one of the group's values (a config key).
  names.erase(std::remove(names.begin(), names.end(), std::string(kTextCrc)), names.end());
  return names;
}

namespace {

char kind_of(hid_t type) {
  switch (H5Tget_class(type)) {
    case H5T_INTEGER: return 'i';
    case H5T_FLOAT: return 'f';
    case H5T_STRING: return 's';
    default: return '?';
  }
}

std::string read_string_value(hid_t obj_type, const std::function<herr_t(hid_t, void*)>& read) {
  if (H5Tis_variable_str(obj_type) > 0) {
    hid_t mem = string_type();
    char* p = nullptr;
    const herr_t rc = read(mem, &p);
    H5Tclose(mem);
    if (rc < 0) return std::string("\x01");
    std::string s = p ? p : "";
    H5free_memory(p);
    return s;
  }
  std::string s(H5Tget_size(obj_type), '\0');
  if (read(obj_type, s.data()) < 0) return std::string("\x01");
  s.resize(std::strlen(s.c_str()));
  return s;
}

}  // namespace

char Group::attr_kind(const std::string& name) const {
  Id attr(H5Aopen(hid_t(id_), name.c_str(), H5P_DEFAULT), H5Aclose, path_, "no attribute " + name + " on " + name_);
  Id type(H5Aget_type(attr), H5Tclose, path_, "attribute type");
  return kind_of(type);
}

namespace {

// dpstudy writes every attribute as one value. An edited or damaged file's
// array in its place would be read past the one value's buffer.
hid_t open_one_value(hid_t group, const std::string& path, const std::string& group_name, const std::string& name) {
  const hid_t attr = H5Aopen(group, name.c_str(), H5P_DEFAULT);
  if (attr < 0) fail(path, "no attribute " + name + " on " + group_name);
  const hid_t space = H5Aget_space(attr);
  const hssize_t n = space < 0 ? -1 : H5Sget_simple_extent_npoints(space);
  if (space >= 0) H5Sclose(space);
  if (n != 1) {
    H5Aclose(attr);
    throw Hdf5Error(path, "attribute " + name + " of " + group_name + " holds " +
                              (n < 0 ? std::string("an unreadable number of") : std::to_string(n)) +
                              " values, expected one (a damaged or edited file)");
  }
  return attr;
}

}  // namespace

namespace {

// HDF5 keeps the characters of every text in a global heap, which no version
// of its format checksums: a damaged byte there was read as another text (a
// config value, a unit; tests/unit/test_hdf5_damage.cpp). So each object's
// texts carry one CRC-32 of their own, written with the file (seal_tree) and
// checked on reading.
std::uint32_t read_crc(hid_t obj, const std::string& path, const std::string& shown, const std::string& name) {
  Id attr(open_one_value(obj, path, shown, name), H5Aclose, path, "attribute " + name);
  Id type(H5Aget_type(attr), H5Tclose, path, "attribute type");
  std::uint32_t v = 0;
  if (kind_of(type) != 'i' || H5Aread(attr, H5T_NATIVE_UINT32, &v) < 0) {
    fail(path, "cannot read the checksum " + name + " of " + shown);
  }
  return v;
}

// The CRC-32 of an object's text attributes but text_crc32, in byte order of
// their names: each name and each value followed by a zero byte. `any`: there
// was at least one.
std::uint32_t texts_crc(hid_t obj, const std::string& path, const std::string& shown, bool* any) {
  std::uint32_t crc = 0;
  *any = false;
  for (const std::string& name : attribute_names(obj, path, shown)) {
    if (name == kTextCrc) continue;
    Id attr(H5Aopen(obj, name.c_str(), H5P_DEFAULT), H5Aclose, path, "no attribute " + name + " on " + shown);
    Id type(H5Aget_type(attr), H5Tclose, path, "attribute type");
    Id space(H5Aget_space(attr), H5Sclose, path, "attribute dataspace");
    if (kind_of(type) != 's' || H5Sget_simple_extent_npoints(space) != 1) continue;
    const std::string value = read_string_value(type, [&](hid_t mem, void* buf) { return H5Aread(attr, mem, buf); });
    if (value == "\x01") fail(path, "cannot read attribute " + name + " of " + shown);
    crc = crc32_text(crc32_text(crc, name), value);
    *any = true;
  }
  return crc;
}

void check_texts(hid_t obj, const std::string& path, const std::string& shown) {
  if (H5Aexists(obj, kTextCrc) <= 0) return;  // no texts, or an earlier build's file
  const std::uint32_t stored = read_crc(obj, path, shown, kTextCrc);
  bool any = false;
  if (texts_crc(obj, path, shown, &any) != stored) {
    throw Hdf5Error(path, "the texts of " + shown + " do not match their checksum (a damaged file)");
  }
}

void seal_texts(hid_t obj, const std::string& path, const std::string& shown) {
  bool any = false;
  const std::uint32_t crc = texts_crc(obj, path, shown, &any);
  if (any) write_attr(obj, path, kTextCrc, H5T_STD_U32LE, H5T_NATIVE_UINT32, &crc);
}

// Writes text_crc32 on every object of the file below `group` that has texts.
void seal_tree(hid_t group, const std::string& path, const std::string& shown) {
  seal_texts(group, path, shown);
  std::vector<std::string> names;  // hard links only: an external one leads into another file
  auto cb = [](hid_t, const char* n, const H5L_info_t* info, void* out) -> herr_t {
    if (info->type == H5L_TYPE_HARD) static_cast<std::vector<std::string>*>(out)->push_back(n);
    return 0;
  };
  hsize_t idx = 0;
  check(H5Literate(group, H5_INDEX_NAME, H5_ITER_NATIVE, &idx, cb, &names), path, "cannot list " + shown);
  for (const std::string& name : names) {
    const std::string child = (shown == "/" ? "" : shown) + "/" + name;
    Id obj(H5Oopen(group, name.c_str(), H5P_DEFAULT), H5Oclose, path, "cannot open " + child);
    if (H5Iget_type(obj) == H5I_GROUP) {
      seal_tree(obj, path, child);
    } else {
      seal_texts(obj, path, child);
    }
  }
}

}  // namespace

std::string Group::get_string(const std::string& name) const {
  if (!texts_checked_) {
    check_texts(hid_t(id_), path_, name_.empty() ? "/" : name_);
    texts_checked_ = true;
  }
  Id attr(open_one_value(hid_t(id_), path_, name_, name), H5Aclose, path_, "attribute " + name);
  Id type(H5Aget_type(attr), H5Tclose, path_, "attribute type");
  if (kind_of(type) != 's') throw Hdf5Error(path_, "attribute " + name + " of " + name_ + " is not a string");
  const std::string s = read_string_value(type, [&](hid_t mem, void* buf) { return H5Aread(attr, mem, buf); });
  if (s == "\x01") fail(path_, "cannot read attribute " + name);
  return s;
}

std::int64_t Group::get_int(const std::string& name) const {
  Id attr(open_one_value(hid_t(id_), path_, name_, name), H5Aclose, path_, "attribute " + name);
  std::int64_t v = 0;
  check(H5Aread(attr, H5T_NATIVE_INT64, &v), path_, "cannot read attribute " + name + " as an integer");
  return v;
}

double Group::get_double(const std::string& name) const {
  Id attr(open_one_value(hid_t(id_), path_, name_, name), H5Aclose, path_, "attribute " + name);
  double v = 0;
  check(H5Aread(attr, H5T_NATIVE_DOUBLE, &v), path_, "cannot read attribute " + name + " as a number");
  return v;
}

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

// The CRC-32 of `count` values of `mem_type` in the file's byte order
// (`file_type`): the same bytes on a little-endian host, converted on others.
std::uint32_t values_crc(hid_t file_type, hid_t mem_type, const void* data, hsize_t count, const std::string& path) {
  const std::size_t bytes = std::size_t(count) * H5Tget_size(mem_type);
  if (H5Tequal(file_type, mem_type) > 0) return crc32_update(0, data, bytes);
  std::vector<unsigned char> buf(std::size_t(count) * std::max(H5Tget_size(file_type), H5Tget_size(mem_type)));
  if (bytes > 0) std::memcpy(buf.data(), data, bytes);
  check(H5Tconvert(mem_type, file_type, std::size_t(count), buf.data(), nullptr, H5P_DEFAULT), path,
        "cannot checksum values");
  return crc32_update(0, buf.data(), std::size_t(count) * H5Tget_size(file_type));
}

// Refuses what was read from `ds` when `crc`, computed from it, is not its
// crc32 attribute (files of earlier builds have none).
void check_crc(hid_t ds, const std::string& path, const std::string& shown, std::uint32_t crc) {
  if (H5Aexists(ds, "crc32") > 0 && read_crc(ds, path, shown, "crc32") != crc) {
    throw Hdf5Error(path, "cannot read " + shown + ": its values do not match their checksum (a damaged file)");
  }
}

// check_crc of `n` numbers read from `ds` as `mem_type`.
void check_values_crc(hid_t ds, const std::string& path, const std::string& shown, hid_t mem_type, const void* values,
                      hsize_t n, hid_t dxpl) {
  if (H5Aexists(ds, "crc32") <= 0) return;
  Id file_type(H5Dget_type(ds), H5Tclose, path, "type of " + shown);
  if (H5Tequal(file_type, mem_type) > 0) {
    check_crc(ds, path, shown, crc32_update(0, values, std::size_t(n) * H5Tget_size(mem_type)));
  } else {  // converted on reading (integers read as reals): the stored bytes, read as they are
    std::vector<unsigned char> raw(std::size_t(n) * H5Tget_size(file_type));
    if (n > 0) check(H5Dread(ds, file_type, H5S_ALL, H5S_ALL, dxpl, raw.data()), path, "cannot read " + shown);
    check_crc(ds, path, shown, crc32_update(0, raw.data(), raw.size()));
  }
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

}  // namespace

void Group::write(const std::string& name, const std::vector<double>& v, const std::string& unit) {
  const hsize_t dims[1] = {v.size()};
  write_dataset(hid_t(id_), path_, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, one_nan(v).data(), 1, dims, unit);
}

void Group::write(const std::string& name, const std::vector<std::int64_t>& v, const std::string& unit) {
  const hsize_t dims[1] = {v.size()};
  write_dataset(hid_t(id_), path_, name, H5T_STD_I64LE, H5T_NATIVE_INT64, v.data(), 1, dims, unit);
}

void Group::write(const std::string& name, const std::vector<std::int32_t>& v, const std::string& unit) {
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
  std::size_t width = 1;
  for (const auto& s : v) width = std::max(width, s.size());
  std::vector<char> padded(v.size() * width, '\0');
  for (std::size_t i = 0; i < v.size(); ++i) std::memcpy(&padded[i * width], v[i].data(), v[i].size());
  Id t(fixed_string_type(width), H5Tclose, path_, "string type");
  const hsize_t dims[1] = {v.size()};
  write_dataset(hid_t(id_), path_, name, t, t, padded.data(), 1, dims, unit);
}

void Group::write_floats(const std::string& name, const float* data, std::int64_t count) {
  const hsize_t dims[1] = {hsize_t(count)};
  write_dataset(hid_t(id_), path_, name, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, data, 1, dims, "");
}

void Group::write_matrix(const std::string& name, const std::vector<double>& v, std::int64_t rows, std::int64_t cols,
                         const std::string& unit) {
  if (std::int64_t(v.size()) != rows * cols) throw Hdf5Error(path_, name + ": data does not fill the matrix");
  const hsize_t dims[2] = {hsize_t(rows), hsize_t(cols)};
  write_dataset(hid_t(id_), path_, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, one_nan(v).data(), 2, dims, unit);
}

namespace {

// The 1.8 file format does not checksum a chunked dataset's chunk index: a
// damaged one can place a chunk outside the dataset, and HDF5 then reads the
// fill value (zeros) without an error, or mark a chunk's checksum as skipped.
// So every chunk must lie within the dataset (as many as its extent needs) with
// no filter skipped. Found by flipping each byte of a run file's chunk indexes;
// what is left: a damaged chunk address that lands on zeros, whose Fletcher32
// sum is zero too (results/README.md).
void check_chunks(hid_t ds, hid_t space, const std::string& path, const std::string& shown) {
#if H5_VERSION_GE(1, 10, 5)
  Id dcpl(H5Dget_create_plist(ds), H5Pclose, path, "creation properties of " + shown);
  if (H5Pget_layout(dcpl) != H5D_CHUNKED) return;
  const int rank = H5Sget_simple_extent_ndims(space);
  std::vector<hsize_t> dims(std::size_t(std::max(rank, 0))), chunk(dims.size());
  if (rank < 1 || H5Sget_simple_extent_dims(space, dims.data(), nullptr) < 0 ||
      H5Pget_chunk(dcpl, rank, chunk.data()) != rank) {
    fail(path, "cannot read the layout of " + shown);
  }
  hsize_t expected = 1, chunks = 0;
  for (int i = 0; i < rank; ++i) expected *= chunk[i] ? (dims[i] + chunk[i] - 1) / chunk[i] : 0;
  // HDF5 1.14 refuses some damage to the index itself, 1.10 reads on.
  check(H5Dget_num_chunks(ds, space, &chunks), path, "cannot read " + shown + ": its chunk index is damaged");
  // HDF5 1.10.8 also trusts each chunk's stored size: a smaller one made it
  // copy the chunk past the end of its buffer (AddressSanitizer, tests/unit/
  // test_hdf5_damage.cpp). Under Fletcher32 alone, as dpstudy writes every
  // dataset, that size is the chunk's values and the 4 bytes of their sum.
  hsize_t stored = 0;
  unsigned flags = 0, filter_config = 0;
  std::size_t cd_count = 0;
  if (H5Pget_nfilters(dcpl) == 1 &&
      H5Pget_filter2(dcpl, 0, &flags, &cd_count, nullptr, 0, nullptr, &filter_config) == H5Z_FILTER_FLETCHER32) {
    Id type(H5Dget_type(ds), H5Tclose, path, "type of " + shown);
    stored = H5Tget_size(type);
    for (int i = 0; i < rank; ++i) stored *= chunk[i];
    stored += 4;
  }
  std::string damage;
  if (chunks != expected) {
    damage = std::to_string(chunks) + " chunk(s) within its extent, expected " + std::to_string(expected);
  }
  for (hsize_t i = 0; damage.empty() && i < chunks; ++i) {
    std::vector<hsize_t> offset(dims.size());
    unsigned skipped = 0;
    haddr_t address = 0;
    hsize_t bytes = 0;
    if (H5Dget_chunk_info(ds, space, i, offset.data(), &skipped, &address, &bytes) < 0 || skipped != 0) {
      damage = "a chunk unreadable or marked as not checksummed";
    } else if (stored != 0 && bytes != stored) {
      damage = "a chunk of " + std::to_string(bytes) + " bytes, expected " + std::to_string(stored);
    }
    for (std::size_t d = 0; damage.empty() && d < dims.size(); ++d) {
      if (chunk[d] == 0 || offset[d] % chunk[d] != 0 || offset[d] >= dims[d]) {
        damage = "a chunk placed outside the dataset";
      }
    }
  }
  if (!damage.empty()) {
    H5Eclear2(H5E_DEFAULT);
    throw Hdf5Error(path, "cannot read " + shown + ": its chunk index is damaged (" + damage + ")");
  }
#else
  (void)ds, (void)space, (void)path, (void)shown;
#endif
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

}  // namespace

std::vector<double> Group::read_doubles(const std::string& name) const {
  return read_numbers<double>(hid_t(id_), path_, name, name_ + "/" + name, H5T_NATIVE_DOUBLE);
}

std::vector<float> Group::read_floats(const std::string& name) const {
  return read_numbers<float>(hid_t(id_), path_, name, name_ + "/" + name, H5T_NATIVE_FLOAT);
}

std::vector<std::int64_t> Group::read_ints(const std::string& name) const {
  return read_numbers<std::int64_t>(hid_t(id_), path_, name, name_ + "/" + name, H5T_NATIVE_INT64);
}

namespace {

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

std::vector<std::string> Group::read_strings(const std::string& name) const {
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

void Group::link_external(const std::string& name, const std::string& file, const std::string& object) {
  check(H5Lcreate_external(file.c_str(), object.c_str(), hid_t(id_), name.c_str(), H5P_DEFAULT, H5P_DEFAULT), path_,
        "cannot link " + name + " to " + file);
}

File::File(hid id, std::string path, bool writable) : id_(id), path_(std::move(path)), writable_(writable) {}

namespace {

// The file format of HDF5 1.8 (version 2 superblock and object headers), which
// checksums the file's metadata: a damaged header or attribute is then refused
// as one ("incorrect metadata checksum") instead of being decoded, where
// HDF5 1.10.8 was found to crash on one (tools/fuzz-inputs, docs/building.md).
// Readable by every HDF5 since 1.8 (h5py, pandas, h5dump).
void use_checksummed_format(hid_t fapl, const std::string& path) {
#if H5_VERSION_GE(1, 10, 2)
  check(H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_V18), path, "cannot choose the file format");
#else
  check(H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST), path, "cannot choose the file format");
#endif
}

// Every chunked dataset here is one chunk (write_dataset): its chunk index
// needs one entry, not room for 64 (HDF5's default, about 1.5 KB a dataset,
// which doubled the index file). Kept in the superblock's extension, which
// every HDF5 since 1.8 reads.
hid_t small_chunk_indexes(const std::string& path) {
  const hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
  if (fcpl < 0) fail(path, "file creation properties");
  if (H5Pset_istore_k(fcpl, 1) < 0) {
    H5Pclose(fcpl);
    fail(path, "cannot size the chunk indexes");
  }
  return fcpl;
}

}  // namespace

File File::create(const std::string& path) {
  silence_library();
  Id fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, path, "file access properties");
  use_checksummed_format(fapl, path);
  Id fcpl(small_chunk_indexes(path), H5Pclose, path, "file creation properties");
  const hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, fcpl, fapl);
  if (f < 0) fail(path, "cannot create HDF5 file");
  return File(f, path, true);
}

File File::create_in_memory(const std::string& path) {
  silence_library();
  Id fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, path, "file access properties");
  use_checksummed_format(fapl, path);
  check(H5Pset_fapl_core(fapl, 1 << 20, /*backing_store=*/0), path, "in-memory driver");
  Id fcpl(small_chunk_indexes(path), H5Pclose, path, "file creation properties");
  const hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, fcpl, fapl);
  if (f < 0) fail(path, "cannot create an in-memory HDF5 file");
  return File(f, path, true);
}

namespace {

// Bob Jenkins' lookup3 hash (hashlittle, public domain), which HDF5 uses for
// its metadata checksums.
std::uint32_t lookup3(const unsigned char* k, std::size_t length) {
  auto rot = [](std::uint32_t x, int n) { return (x << n) | (x >> (32 - n)); };
  auto word = [](const unsigned char* p) {
    return std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 | std::uint32_t(p[2]) << 16 | std::uint32_t(p[3]) << 24;
  };
  std::uint32_t a, b, c;
  a = b = c = 0xdeadbeefu + std::uint32_t(length);
  while (length > 12) {
    a += word(k), b += word(k + 4), c += word(k + 8);
    a -= c, a ^= rot(c, 4), c += b;
    b -= a, b ^= rot(a, 6), a += c;
    c -= b, c ^= rot(b, 8), b += a;
    a -= c, a ^= rot(c, 16), c += b;
    b -= a, b ^= rot(a, 19), a += c;
    c -= b, c ^= rot(b, 4), b += a;
    length -= 12, k += 12;
  }
  if (length == 0) return c;
  unsigned char tail[12] = {};
  std::memcpy(tail, k, length);
  a += word(tail), b += word(tail + 4), c += word(tail + 8);
  c ^= b, c -= rot(b, 14);
  a ^= c, a -= rot(c, 11);
  b ^= a, b -= rot(a, 25);
  c ^= b, c -= rot(b, 16);
  a ^= c, a -= rot(c, 4);
  b ^= a, b -= rot(a, 14);
  c ^= b, c -= rot(b, 24);
  return c;
}

// HDF5 1.10.8's H5Fget_file_image writes the file's end into the image's
// version 2 superblock without updating its checksum, so the file would not
// open ("incorrect metadata checksum"). The superblock is the signature (8
// bytes), version, the sizes of offsets and lengths, flags, then four
// addresses and the checksum of all before it; recomputing it is a no-op
// where HDF5 got it right.
void mend_superblock_checksum(std::vector<char>& image) {
  static const char signature[8] = {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'};
  if (image.size() < 12 || std::memcmp(image.data(), signature, 8) != 0) return;
  const int version = image[8];
  const std::size_t offsets = std::size_t(static_cast<unsigned char>(image[9]));
  const std::size_t at = 12 + 4 * offsets;
  if ((version != 2 && version != 3) || image.size() < at + 4) return;
  const std::uint32_t sum = lookup3(reinterpret_cast<const unsigned char*>(image.data()), at);
  for (int i = 0; i < 4; ++i) image[at + std::size_t(i)] = char((sum >> (8 * i)) & 0xff);
}

}  // namespace

void File::seal() {
  Id root(H5Gopen2(hid_t(id_), "/", H5P_DEFAULT), H5Gclose, path_, "cannot open the root group");
  seal_tree(root, path_, "/");
}

std::vector<char> File::image() {
  if (writable_) seal();
  check(H5Fflush(hid_t(id_), H5F_SCOPE_GLOBAL), path_, "cannot flush the in-memory file");
  const ssize_t size = H5Fget_file_image(hid_t(id_), nullptr, 0);
  if (size < 0) fail(path_, "cannot size the file image");
  std::vector<char> bytes(static_cast<std::size_t>(size));
  if (H5Fget_file_image(hid_t(id_), bytes.data(), bytes.size()) < 0) fail(path_, "cannot copy the file image");
  mend_superblock_checksum(bytes);
  return bytes;
}

namespace {

// Reads `n` bytes at `at`; false at the end of the file or on an error.
bool read_at(int fd, std::uint64_t at, unsigned char* buf, std::size_t n) {
  while (n > 0) {
    const ssize_t got = ::pread(fd, buf, n, off_t(at));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    buf += got, at += std::uint64_t(got), n -= std::size_t(got);
  }
  return true;
}

std::uint64_t little_endian(const unsigned char* p, std::size_t bytes) {
  std::uint64_t v = 0;
  for (std::size_t i = bytes; i-- > 0;) v = v << 8 | p[i];
  return v;
}

// HDF5 1.10 trusts the sizes of the objects in a global heap collection (the
// store of texts, which its format does not checksum): one damaged size made
// it read outside the collection and crash, or loop (tests/unit/
// test_hdf5_damage.cpp; HDF5 1.14 refuses it). So every collection is walked
// here first, and one whose objects do not fit in it is refused. Collections
// are found by their signature; a "GCOL" in a dataset's values that is not
// one fails the version and reserved bytes that follow, which a real
// collection has as 1, 0, 0, 0.
void check_global_heaps(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;  // H5Fopen tells why
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return;
  const auto size = std::uint64_t(st.st_size);
  // The size of lengths, from a superblock at the start (where dpstudy writes it).
  unsigned char sb[16];
  if (!read_at(fd, 0, sb, sizeof sb) || std::memcmp(sb, "\x89HDF\r\n\x1a\n", 8) != 0) return;
  const std::size_t lengths = sb[8] >= 2 ? sb[10] : sb[14];
  if (lengths != 2 && lengths != 4 && lengths != 8) return;
  const std::size_t header = 8 + lengths, object_header = 8 + lengths;
  auto check_collection = [&](std::uint64_t at) {
    unsigned char h[16];
    if (!read_at(fd, at, h, header) || h[4] != 1 || h[5] != 0 || h[6] != 0 || h[7] != 0) return;
    const std::uint64_t bytes = little_endian(h + 8, lengths);
    auto damaged = [&](const std::string& what) {
      throw Hdf5Error(path, "cannot open: the global heap at byte " + std::to_string(at) +
                                " (where HDF5 keeps texts) is damaged: " + what);
    };
    if (bytes < header || bytes > size - at) damaged("it runs past the end of the file");
    std::vector<unsigned char> heap(static_cast<std::size_t>(bytes));
    if (!read_at(fd, at, heap.data(), heap.size())) return;
    for (std::uint64_t pos = header; bytes - pos >= object_header;) {
      const unsigned index = unsigned(heap[pos]) | unsigned(heap[pos + 1]) << 8;
      const std::uint64_t object = little_endian(&heap[pos + 8], lengths);
      if (object > bytes) damaged("an object is larger than its collection");
      const std::uint64_t need = index > 0 ? object_header + ((object + 7) & ~std::uint64_t(7)) : object;
      if (need == 0 || need > bytes - pos) damaged("an object runs past the end of its collection");
      pos += need;
    }
  };
  std::vector<unsigned char> block(static_cast<std::size_t>(std::min<std::uint64_t>(size, 1 << 20)));
  for (std::uint64_t at = 0; at < size;) {
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(block.size(), size - at));
    if (!read_at(fd, at, block.data(), n)) return;
    const unsigned char* const end = block.data() + n;
    for (const unsigned char* p = block.data();
         (p = static_cast<const unsigned char*>(::memmem(p, std::size_t(end - p), "GCOL", 4))) != nullptr; ++p) {
      check_collection(at + std::uint64_t(p - block.data()));
    }
    if (at + n >= size) break;
    at += n - 3;  // a signature across two blocks is found in the second
  }
}

}  // namespace

File File::open_read(const std::string& path) {
  silence_library();
  check_global_heaps(path);
  Id fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, path, "file access properties");
#if H5_VERSION_GE(1, 12, 1) || (H5_VERS_MAJOR == 1 && H5_VERS_MINOR == 10 && H5_VERS_RELEASE >= 7)
  // No lock: dpstudy writes every file whole under a temporary name and renames
  // it (write_hdf5_atomically), never in place, so a reader cannot meet a
  // writer. HDF5's lock would only fail where the file system has none (NFS
  // without its lock daemon: ENOLCK, which HDF5's best effort does not ignore).
  check(H5Pset_file_locking(fapl, /*use_file_locking=*/false, /*ignore_when_disabled=*/true), path,
        "cannot turn file locking off");
#endif
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl);
  if (f < 0) {
    struct stat st {};
    // HDF5's own message for a missing file is a screenful about its drivers.
    if (::stat(path.c_str(), &st) != 0 && errno == ENOENT) {
      H5Eclear2(H5E_DEFAULT);
      throw Hdf5Error(path, "no such file");
    }
    if (S_ISDIR(st.st_mode)) {  // and for a folder, one about reading 8 bytes from it
      H5Eclear2(H5E_DEFAULT);
      throw Hdf5Error(path, "is a folder, not an HDF5 file");
    }
    fail(path, "cannot open as an HDF5 file (truncated or not HDF5)");
  }
  return File(f, path, false);
}

File::File(File&& o) noexcept : id_(o.id_), path_(std::move(o.path_)), writable_(o.writable_) { o.id_ = -1; }

File::~File() {
  if (id_ >= 0) H5Fclose(hid_t(id_));
}

Group File::root() const {
  const hid_t g = H5Gopen2(hid_t(id_), "/", H5P_DEFAULT);
  if (g < 0) fail(path_, "cannot open the root group");
  return Group(g, path_, "");
}

void File::close() {
  if (id_ < 0) return;
  if (writable_) {
    try {
      seal();
    } catch (...) {
      H5Fclose(hid_t(id_));
      id_ = -1;
      throw;
    }
  }
  const hid_t f = hid_t(id_);
  id_ = -1;
  if (H5Fflush(f, H5F_SCOPE_GLOBAL) < 0) {
    H5Fclose(f);
    fail(path_, "cannot write (disk full?)");
  }
  check(H5Fclose(f), path_, "cannot close (disk full?)");
}

std::string library_version() {
  unsigned major = 0, minor = 0, release = 0;
  H5get_libversion(&major, &minor, &release);
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release);
}

}  // namespace dpstudy::h5
