// Helpers shared by the unit tests: scratch folders and hand-made data files.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "dpstudy/file_io.hpp"

namespace dpstudy::test {

// The unit tests call only the std::filesystem functions the workloads call
// (the error_code forms): a PyTorch wheel's libtorch_cpu.so exports its own
// copies of libstdc++'s filesystem code (pytorch/pytorch#133437), and the
// workloads' set is the one checked against a wheel on a GPU (docs/gpu.md).
inline void make_dirs(const std::filesystem::path& p) {
  std::error_code ec;
  std::filesystem::create_directories(p, ec);
  if (ec) throw std::runtime_error("cannot create " + p.string() + ": " + ec.message());
}
inline void remove_file(const std::filesystem::path& p) {  // a missing file is no error
  std::error_code ec;
  std::filesystem::remove(p, ec);
  if (ec) throw std::runtime_error("cannot remove " + p.string() + ": " + ec.message());
}
inline bool file_exists(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::exists(p, ec);
}

// A fresh folder under $TMPDIR (or /tmp), removed at the end of the test.
class ScratchDir {
 public:
  ScratchDir() {
    std::string templ = temp_folder() + "/dpstudy-test-XXXXXX";
    const char* made = mkdtemp(templ.data());
    if (made == nullptr) {
      throw std::runtime_error("ScratchDir: cannot create " + templ + ": " + std::strerror(errno) +
                               " (set TMPDIR to a writable folder)");
    }
    path_ = made;
  }
  ~ScratchDir() {
    remove_tree(path_.string());
  }
  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

inline void write_bytes(const std::filesystem::path& p, const std::vector<std::uint8_t>& bytes, bool gzip = false) {
  make_dirs(p.parent_path());
  OutputFile f(p.string(), gzip);
  f.write(bytes.data(), bytes.size());
  f.close();
}

inline std::vector<std::uint8_t> read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// An IDX file: magic, dims, then `payload` (not checked against dims, on purpose).
inline std::vector<std::uint8_t> idx_bytes(std::uint32_t magic, const std::vector<std::uint32_t>& dims,
                                           const std::vector<std::uint8_t>& payload) {
  std::vector<std::uint8_t> out(4 + 4 * dims.size());
  write_be32(out.data(), magic);
  for (std::size_t i = 0; i < dims.size(); ++i) write_be32(out.data() + 4 + 4 * i, dims[i]);
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

// Keeps the user's DPSTUDY_DATA_DIR out of a test's look-ups.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) {
      old_ = old;
      had_ = true;
    }
    if (value) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_.c_str(), old_.c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }

 private:
  std::string name_, old_;
  bool had_ = false;
};

}  // namespace dpstudy::test
