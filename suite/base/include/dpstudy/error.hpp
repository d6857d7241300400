// The typed exceptions every layer of dpstudy throws. Each C boundary (files and
// zlib here; HDF5 and MPI in their own layers) turns its failures into one of
// these once; `main` catches them once, prints the message and exits non-zero.
#pragma once

#include <stdexcept>
#include <string>

namespace dpstudy {

// Base of all dpstudy errors: the message is complete and meant for the user.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A data file is missing, unreadable or malformed. what() starts with the path.
class DataError : public Error {
 public:
  DataError(std::string path, const std::string& problem)
      : Error(path + ": " + problem), path_(std::move(path)) {}
  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
};

// A named thing (dataset, option value, key) is not one of the accepted ones.
class UsageError : public Error {
 public:
  using Error::Error;
};

// An option has a value that is not allowed. what(): "--option: 'value' ...".
class ConfigError : public UsageError {
 public:
  ConfigError(const std::string& option, const std::string& value, const std::string& allowed)
      : UsageError("--" + option + ": '" + value + "' " + allowed) {}
};

}  // namespace dpstudy
