// The one layer between dpstudy and the HDF5 C library. Every call is checked;
// a failure becomes an Hdf5Error carrying the file path, what was being done and
// HDF5's own error stack. Nothing else in dpstudy includes hdf5.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dpstudy/error.hpp"

namespace dpstudy {

class Hdf5Error : public Error {
 public:
  Hdf5Error(const std::string& path, const std::string& what) : Error(path + ": " + what), path_(path) {}
  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
};

namespace h5 {

using hid = std::int64_t;  // hid_t, kept opaque so hdf5.h stays out of this header

// A group (or the file's root group). Attributes and 1-D datasets, one call each.
class Group {
 public:
  Group(hid id, std::string path, std::string name);
  ~Group();
  Group(Group&& other) noexcept;
  Group& operator=(Group&&) = delete;
  Group(const Group&) = delete;

  Group create_group(const std::string& name);
  Group open_group(const std::string& name) const;
  bool has(const std::string& name) const;
  std::vector<std::string> members() const;
  // Whether member `name` is a group (else a dataset); opens it, so a damaged
  // header is an error here.
  bool is_group(const std::string& name) const;

  void set(const std::string& attr, const std::string& value);
  void set(const std::string& attr, const char* value) { set(attr, std::string(value)); }
  void set(const std::string& attr, std::int64_t value);
  void set(const std::string& attr, double value);
  bool has_attr(const std::string& attr) const;
  std::vector<std::string> attr_names() const;  // without text_crc32, this layer's own
  // Attribute type: 'i' integer, 'f' float, 's' string.
  char attr_kind(const std::string& attr) const;
  // A text attribute; the first read checks all of this group's texts against
  // their checksum (`text_crc32`, written when the file is).
  std::string get_string(const std::string& attr) const;
  std::int64_t get_int(const std::string& attr) const;
  double get_double(const std::string& attr) const;

  // 1-D datasets; `unit` (if not empty) becomes the dataset's "units" attribute.
  void write(const std::string& name, const std::vector<double>& v, const std::string& unit = "");
  void write(const std::string& name, const std::vector<std::int64_t>& v, const std::string& unit = "");
  void write(const std::string& name, const std::vector<std::int32_t>& v, const std::string& unit = "");
  void write(const std::string& name, const std::vector<std::string>& v, const std::string& unit = "");
  // Float32 data, bit for bit (checkpoints of model state).
  void write_floats(const std::string& name, const float* data, std::int64_t count);
  std::vector<float> read_floats(const std::string& name) const;
  // A 2-D dataset [rows, cols], row-major.
  void write_matrix(const std::string& name, const std::vector<double>& v, std::int64_t rows, std::int64_t cols,
                    const std::string& unit = "");
  void write_matrix(const std::string& name, const std::vector<std::int64_t>& v, std::int64_t rows, std::int64_t cols,
                    const std::string& unit = "");
  std::vector<double> read_doubles(const std::string& name) const;
  std::vector<std::int64_t> read_ints(const std::string& name) const;
  std::vector<std::string> read_strings(const std::string& name) const;
  // Dataset type: 'i', 'f' or 's'.
  char dataset_kind(const std::string& name) const;
  // The dataset's extent per dimension ({rows} for 1-D, {rows, cols} for a matrix);
  // with `kind`, its type as dataset_kind gives it, from the same opening.
  std::vector<std::int64_t> dataset_shape(const std::string& name, char* kind = nullptr) const;
  // The dataset's "units" attribute, or "" when it has none.
  std::string dataset_units(const std::string& name) const;
  // A link `name` to object `object` in another file (path relative to this file).
  void link_external(const std::string& name, const std::string& file, const std::string& object);

 private:
  hid id_;
  std::string path_;  // file path, for errors
  std::string name_;  // object name, for errors
  mutable bool texts_checked_ = false;
};

class File {
 public:
  // Creates (truncating) or opens read-only. Throws Hdf5Error naming the path.
  // A file created here gets the checksums of its texts (`text_crc32`) when it
  // is written out: by close() or image(). Numeric and text datasets carry the
  // CRC-32 of their values (`crc32`), checked whenever they are read.
  static File create(const std::string& path);
  static File open_read(const std::string& path);
  // A file built in memory (HDF5's core driver), to be written out whole with
  // image(): the disk is then touched by our own checked POSIX writes only.
  // `path` names it in errors.
  static File create_in_memory(const std::string& path);
  // The complete file as bytes (flushes first).
  std::vector<char> image();
  ~File();
  File(File&& other) noexcept;
  File(const File&) = delete;
  // A handle on "/"; destroy every Group before close().
  Group root() const;
  // Flushes and closes; throws on failure (a full disk shows here).
  void close();
  const std::string& path() const { return path_; }

 private:
  File(hid id, std::string path, bool writable);
  void seal();  // text_crc32 on every object with texts
  hid id_;
  std::string path_;
  bool writable_;
};

// The library's version, e.g. "1.10.8".
std::string library_version();

// A dataset_shape in words for messages: "60", "60 x 4", "no" for none.
std::string shape_text(const std::vector<std::int64_t>& shape);

}  // namespace h5
}  // namespace dpstudy
