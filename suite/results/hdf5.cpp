// The HDF5 layer (dpstudy/hdf5.hpp): its error layer, groups and their
// attributes. Datasets: hdf5_datasets.cpp; files: hdf5_file.cpp; the checks
// that refuse a damaged file: hdf5_integrity.cpp.
#include "dpstudy/hdf5.hpp"

#include <hdf5.h>

#include <algorithm>
#include <cstring>
#include <functional>

#include "hdf5_detail.hpp"

namespace dpstudy::h5 {

namespace {

herr_t collect(unsigned n, const H5E_error2_t* e, void* out) {
  auto& s = *static_cast<std::string*>(out);
  if (n < 3) {  // walked upward: the innermost frames, where the cause is
    s += std::string(n ? "; " : "") + (e->func_name ? e->func_name : "?") + ": " + (e->desc ? e->desc : "?");
  }
  return 0;
}

}  // namespace

namespace detail {

std::unique_lock<std::recursive_mutex> hold() {
  static std::recursive_mutex library;
  return std::unique_lock<std::recursive_mutex>(library);
}

// HDF5 prints its error stack itself unless told not to; we collect it instead.
// Once per thread: a thread-safe HDF5 (Debian's) keeps a stack per thread.
void silence_library() {
  thread_local const bool done = [] {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return true;
  }();
  (void)done;
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

void write_attr(hid_t obj, const std::string& path, const std::string& name, hid_t file_type, hid_t mem_type,
                const void* data) {
  if (H5Aexists(obj, name.c_str()) > 0) check(H5Adelete(obj, name.c_str()), path, "cannot replace attribute " + name);
  Id space(H5Screate(H5S_SCALAR), H5Sclose, path, "dataspace");
  Id attr(H5Acreate2(obj, name.c_str(), file_type, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose, path,
          "cannot create attribute " + name);
  check(H5Awrite(attr, mem_type, data), path, "cannot write attribute " + name);
}

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

}  // namespace detail

using namespace detail;

Group::Group(hid id, std::string path, std::string name) : id_(id), path_(std::move(path)), name_(std::move(name)) {}

Group::~Group() {
  const auto held = hold();
  if (id_ >= 0) H5Gclose(hid_t(id_));
}

Group::Group(Group&& o) noexcept : id_(o.id_), path_(std::move(o.path_)), name_(std::move(o.name_)) { o.id_ = -1; }

Group Group::create_group(const std::string& name) {
  const auto held = hold();
  const hid_t g = H5Gcreate2(hid_t(id_), name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (g < 0) fail(path_, "cannot create group " + name);
  return Group(g, path_, name_ + "/" + name);
}

Group Group::open_group(const std::string& name) const {
  const auto held = hold();
  const hid_t g = H5Gopen2(hid_t(id_), name.c_str(), H5P_DEFAULT);
  if (g < 0) fail(path_, "no group " + name + " in " + (name_.empty() ? "/" : name_));
  return Group(g, path_, name_ + "/" + name);
}

bool Group::has(const std::string& name) const {
  const auto held = hold();
  return H5Lexists(hid_t(id_), name.c_str(), H5P_DEFAULT) > 0;
}

bool Group::is_group(const std::string& name) const {
  const auto held = hold();
  Id obj(H5Oopen(hid_t(id_), name.c_str(), H5P_DEFAULT), H5Oclose, path_, "cannot open " + name_ + "/" + name);
  return H5Iget_type(obj) == H5I_GROUP;
}

// Both listings walk the names in the order they are stored and sort them here:
// listing in name order builds a table of every entry, and when an entry of a
// damaged file fails to decode, HDF5 (1.10.8 and 1.14.5 alike) frees the
// table's unfilled entries and crashes (found by tools/fuzz-inputs under
// AddressSanitizer). Walking them returns the error instead.
std::vector<std::string> Group::members() const {
  const auto held = hold();
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

void Group::link_external(const std::string& name, const std::string& file, const std::string& object) {
  const auto held = hold();
  check(H5Lcreate_external(file.c_str(), object.c_str(), hid_t(id_), name.c_str(), H5P_DEFAULT, H5P_DEFAULT), path_,
        "cannot link " + name + " to " + file);
}

void Group::set(const std::string& name, const std::string& value) {
  const auto held = hold();
  Id t(string_type(), H5Tclose, path_, "string type");
  const char* p = value.c_str();
  write_attr(hid_t(id_), path_, name, t, t, &p);
}

void Group::set(const std::string& name, std::int64_t value) {
  const auto held = hold();
  write_attr(hid_t(id_), path_, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &value);
}

void Group::set(const std::string& name, double value) {
  const auto held = hold();
  value = one_nan(value);
  write_attr(hid_t(id_), path_, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value);
}

bool Group::has_attr(const std::string& name) const {
  const auto held = hold();
  return H5Aexists(hid_t(id_), name.c_str()) > 0;
}

std::vector<std::string> Group::attr_names() const {
  const auto held = hold();
  std::vector<std::string> names = attribute_names(hid_t(id_), path_, name_);
  // The texts' checksum is this layer's, not one of the group's values (a config key).
  names.erase(std::remove(names.begin(), names.end(), std::string(kTextCrc)), names.end());
  return names;
}

char Group::attr_kind(const std::string& name) const {
  const auto held = hold();
  Id attr(H5Aopen(hid_t(id_), name.c_str(), H5P_DEFAULT), H5Aclose, path_, "no attribute " + name + " on " + name_);
  Id type(H5Aget_type(attr), H5Tclose, path_, "attribute type");
  return kind_of(type);
}

std::string Group::get_string(const std::string& name) const {
  const auto held = hold();
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
  const auto held = hold();
  Id attr(open_one_value(hid_t(id_), path_, name_, name), H5Aclose, path_, "attribute " + name);
  std::int64_t v = 0;
  check(H5Aread(attr, H5T_NATIVE_INT64, &v), path_, "cannot read attribute " + name + " as an integer");
  return v;
}

double Group::get_double(const std::string& name) const {
  const auto held = hold();
  Id attr(open_one_value(hid_t(id_), path_, name_, name), H5Aclose, path_, "attribute " + name);
  double v = 0;
  check(H5Aread(attr, H5T_NATIVE_DOUBLE, &v), path_, "cannot read attribute " + name + " as a number");
  return v;
}

std::string library_version() {
  const auto held = hold();
  unsigned major = 0, minor = 0, release = 0;
  H5get_libversion(&major, &minor, &release);
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release);
}

}  // namespace dpstudy::h5
