#include "dpstudy/file_io.hpp"

#include <fcntl.h>
#include <ftw.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "dpstudy/error.hpp"

namespace dpstudy {
namespace {

gzFile as_gz(void* p) { return static_cast<gzFile>(p); }

std::string gz_problem(gzFile gz) {
  int code = Z_OK;
  const char* msg = gzerror(gz, &code);
  if (code == Z_ERRNO) return std::strerror(errno);
  return msg && *msg ? msg : "read error";
}

std::string file_name_of(const std::string& path) {
  std::string name = std::filesystem::path(path).filename().string();
  if (name.size() > 3 && name.compare(name.size() - 3, 3, ".gz") == 0) name.resize(name.size() - 3);
  return name;
}

}  // namespace

InputFile::InputFile(std::string path) : path_(std::move(path)) {
  std::error_code ec;
  if (std::filesystem::is_directory(path_, ec)) throw DataError(path_, "is a directory, expected a file");
  errno = 0;
  gz_ = gzopen(path_.c_str(), "rb");
  if (!gz_) {
    throw DataError(path_, std::string("cannot open: ") + (errno ? std::strerror(errno) : "out of memory"));
  }
  gzbuffer(as_gz(gz_), 1 << 20);
  // Right after gzopen, gzdirect() reads the first bytes to tell gzip from plain.
  compressed_ = gzdirect(as_gz(gz_)) == 0;
}

InputFile::~InputFile() {
  if (gz_) gzclose_r(as_gz(gz_));
}

std::size_t InputFile::read(void* dst, std::size_t size) {
  auto out = static_cast<std::uint8_t*>(dst);
  std::size_t done = 0;
  while (done < size) {
    const unsigned chunk = unsigned(std::min<std::size_t>(size - done, 1u << 30));
    const int got = gzread(as_gz(gz_), out + done, chunk);
    if (got < 0) throw DataError(path_, "corrupt or unreadable data after byte " +
                                            std::to_string(bytes_read_ + done) + ": " +
                                            gz_problem(as_gz(gz_)));
    if (got == 0) {
      int code = Z_OK;
      gzerror(as_gz(gz_), &code);
      if (code != Z_OK) {
        throw DataError(path_, "compressed stream is truncated or corrupt after byte " +
                                   std::to_string(bytes_read_ + done) + " of decompressed data: " +
                                   gz_problem(as_gz(gz_)));
      }
      break;
    }
    done += std::size_t(got);
  }
  hash_.update(out, done);
  bytes_read_ += done;
  return done;
}

void InputFile::read_exact(void* dst, std::size_t size, const std::string& what) {
  const std::uint64_t before = bytes_read_;
  const std::size_t got = read(dst, size);
  if (got != size) {
    throw DataError(path_, "truncated: expected " + std::to_string(size) + " bytes of " + what +
                               " at byte " + std::to_string(before) + ", the file ends after " +
                               std::to_string(got));
  }
}

std::vector<std::uint8_t> InputFile::read_rest() {
  std::vector<std::uint8_t> data;
  std::error_code ec;
  const auto on_disk = std::filesystem::file_size(path_, ec);
  std::size_t chunk = ec ? (1u << 20) : std::max<std::size_t>(on_disk, 1u << 16);
  for (;;) {
    const std::size_t old = data.size();
    data.resize(old + chunk);
    const std::size_t got = read(data.data() + old, chunk);
    data.resize(old + got);
    if (got < chunk) return data;
    chunk = std::max<std::size_t>(chunk, 1u << 20);
  }
}

bool InputFile::at_end() {
  const int c = gzgetc(as_gz(gz_));
  if (c == -1) {
    int code = Z_OK;
    gzerror(as_gz(gz_), &code);
    if (code != Z_OK) throw DataError(path_, "corrupt data at the end: " + gz_problem(as_gz(gz_)));
    return true;
  }
  gzungetc(c, as_gz(gz_));
  return false;
}

FileRecord InputFile::record() {
  FileRecord r;
  r.path = path_;
  r.name = file_name_of(path_);
  r.bytes = bytes_read_;
  r.sha256 = sha256();
  return r;
}

OutputFile::OutputFile(std::string path, bool gzip)
    : path_(std::move(path)), tmp_path_(path_ + ".tmp") {
  errno = 0;
  gz_ = gzopen(tmp_path_.c_str(), gzip ? "wb6" : "wbT");
  if (!gz_) throw DataError(tmp_path_, std::string("cannot create: ") + std::strerror(errno));
}

OutputFile::~OutputFile() {
  if (gz_) {  // not closed: an exception is on its way; leave nothing half-written behind
    gzclose_w(as_gz(gz_));
    std::remove(tmp_path_.c_str());
  }
}

void OutputFile::write(const void* src, std::size_t size) {
  auto p = static_cast<const std::uint8_t*>(src);
  while (size > 0) {
    const unsigned chunk = unsigned(std::min<std::size_t>(size, 1u << 30));
    const int put = gzwrite(as_gz(gz_), p, chunk);
    if (put <= 0) throw DataError(tmp_path_, "write failed: " + gz_problem(as_gz(gz_)));
    p += put;
    size -= std::size_t(put);
  }
}

void OutputFile::close() {
  const int rc = gzclose_w(as_gz(gz_));
  gz_ = nullptr;
  if (rc != Z_OK) {
    std::remove(tmp_path_.c_str());
    throw DataError(tmp_path_, "closing failed (disk full?)");
  }
  std::error_code ec;
  std::filesystem::rename(tmp_path_, path_, ec);
  if (ec) throw DataError(path_, "cannot move into place: " + ec.message());
}

void remove_tree(const std::string& dir) noexcept {
  // Depth first, without following links: files and links, then their folders.
  nftw(
      dir.c_str(),
      [](const char* path, const struct stat*, int, struct FTW*) {
        std::remove(path);  // quietly: what cannot be removed stays
        return 0;
      },
      16, FTW_DEPTH | FTW_PHYS);
}

std::string temp_folder() {
  const char* tmp = std::getenv("TMPDIR");
  return tmp && *tmp ? tmp : "/tmp";
}

bool create_exclusive(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (errno == EEXIST) return false;
    throw DataError(path, std::string("cannot create: ") + std::strerror(errno));
  }
  const ssize_t n = ::write(fd, text.data(), text.size());
  const int err = errno;
  ::close(fd);
  // The file's existence is the claim; its text only says who made it.
  if (n < 0) throw DataError(path, std::string("cannot write: ") + std::strerror(err));
  return true;
}

std::uint32_t read_be32(const std::uint8_t* p) {
  return (std::uint32_t(p[0]) << 24) | (std::uint32_t(p[1]) << 16) | (std::uint32_t(p[2]) << 8) |
         std::uint32_t(p[3]);
}

void write_be32(std::uint8_t* p, std::uint32_t v) {
  p[0] = std::uint8_t(v >> 24);
  p[1] = std::uint8_t(v >> 16);
  p[2] = std::uint8_t(v >> 8);
  p[3] = std::uint8_t(v);
}

std::string checksum_lines(const std::string& dataset, const std::vector<FileRecord>& files) {
  std::string text;
  for (const auto& f : files) {
    text += dataset + "/" + f.name + " bytes=" + std::to_string(f.bytes) + " sha256=" + f.sha256 + "\n";
  }
  return text;
}

std::string data_digest(const std::string& checksum_lines) {
  return Sha256::of(checksum_lines.data(), checksum_lines.size()).substr(0, 16);
}

std::string checksum_differences(const std::string& a_text, const std::string& b_text, const std::string& then,
                                 const std::string& now) {
  // file -> "bytes=N sha256=HEX"
  const auto parse = [](const std::string& text) {
    std::map<std::string, std::string> files;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
      const auto space = line.find(' ');
      if (space != std::string::npos) files[line.substr(0, space)] = line.substr(space + 1);
    }
    return files;
  };
  const auto a = parse(a_text), b = parse(b_text);
  const auto shown = [](const std::map<std::string, std::string>& files, const std::string& name) {
    const auto it = files.find(name);
    if (it == files.end()) return std::string("none");
    const auto sha = it->second.find("sha256=");
    return sha == std::string::npos ? it->second : it->second.substr(sha, 7 + 12) + "...";
  };
  std::set<std::string> names;
  for (const auto* files : {&a, &b}) {
    for (const auto& [name, line] : *files) names.insert(name);
  }
  std::string out;
  for (const std::string& name : names) {
    const auto x = a.find(name), y = b.find(name);
    if (x != a.end() && y != b.end() && x->second == y->second) continue;
    out += (out.empty() ? "" : ", ") + name + " (" + shown(a, name) + " " + then + ", " + shown(b, name) + " " + now +
           ")";
  }
  return out;
}

int stdout_exit_status(const std::string& prog, int status) {
  std::cout.flush();
  errno = 0;
  const bool flush_failed = std::fflush(stdout) != 0;
  const int err = errno;  // an earlier failed write leaves ferror set and the buffer to write again
  if (!flush_failed && !std::ferror(stdout) && !std::cout.fail()) return status;
  const std::string why = flush_failed && err != 0 ? std::string(" (") + std::strerror(err) + ")" : "";
  std::fprintf(stderr, "%s: error: writing its standard output failed%s: what it printed is incomplete\n",
               prog.c_str(), why.c_str());
  return status == 0 ? 1 : status;
}

}  // namespace dpstudy
