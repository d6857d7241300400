// The one layer between dpstudy and the C file API (zlib's gz* functions read
// plain and gzip-compressed files alike). Every failure is a DataError that
// names the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "dpstudy/sha256.hpp"

namespace dpstudy {

// What a dataset file was: recorded in provenance and checked against the manifest.
struct FileRecord {
  std::string path;        // as opened
  std::string name;        // file name without a .gz suffix, as in the manifest
  std::uint64_t bytes = 0;  // decompressed
  std::string sha256;      // of the decompressed bytes
};
// "dataset/file bytes=N sha256=HEX", one line per file: what run files (provenance
// dataset_checksums) and checkpoints record of the data they were trained on.
std::string checksum_lines(const std::string& dataset, const std::vector<FileRecord>& files);
// The first 16 hex digits of the SHA-256 of such lines: the study index's data_digest,
// one short name for one set of data files.
std::string data_digest(const std::string& checksum_lines);
// The files whose lines differ between two texts of checksum_lines() (a run file's
// provenance, a checkpoint, another process's), e.g.
// "mnist/train-images-idx3-ubyte (sha256=462cff469402... then, sha256=1351752f3805... now)"; empty if none.
// `then` and `now` name the two sides in the text.
std::string checksum_differences(const std::string& a, const std::string& b, const std::string& then = "then",
                                 const std::string& now = "now");

// Reads a file that may or may not be gzip-compressed, hashing the decompressed
// bytes as they pass so that verifying a dataset costs no second read.
class InputFile {
 public:
  explicit InputFile(std::string path);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  // Reads up to `size` bytes; fewer only at the end of the data.
  std::size_t read(void* dst, std::size_t size);
  // Reads exactly `size` bytes of `what` (named in the error if the file ends early).
  void read_exact(void* dst, std::size_t size, const std::string& what);
  // Reads everything that is left.
  std::vector<std::uint8_t> read_rest();
  // True when no byte is left (reads ahead one byte to find out).
  bool at_end();

  const std::string& path() const noexcept { return path_; }
  bool compressed() const noexcept { return compressed_; }
  std::uint64_t bytes_read() const noexcept { return bytes_read_; }
  // SHA-256 of all bytes read so far (call once, after the last read).
  std::string sha256() { return hash_.hex_digest(); }
  // Path, name, size and SHA-256 of what was read (call once, after the last read).
  FileRecord record();

 private:
  std::string path_;
  void* gz_ = nullptr;  // gzFile, kept opaque so zlib.h stays out of this header
  bool compressed_ = false;
  std::uint64_t bytes_read_ = 0;
  Sha256 hash_;
};

// Writes a file, gzip-compressed or not; used by the fixture generator.
// The data goes to `path`.tmp and is renamed into place by close().
class OutputFile {
 public:
  OutputFile(std::string path, bool gzip);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  void write(const void* src, std::size_t size);
  void close();

 private:
  std::string path_;
  std::string tmp_path_;
  void* gz_ = nullptr;
};

// Deletes a folder and everything under it, quietly (scratch folders of tests
// and benchmarks). Not std::filesystem::remove_all: LibTorch wheels 2.5 and
// later export libstdc++'s recursive_directory_iterator from libtorch_cpu.so
// (pytorch/pytorch#133437), and a program linked against such a wheel can bind
// to that copy and crash.
void remove_tree(const std::string& dir) noexcept;
// Where scratch files go: $TMPDIR, or /tmp (temp_directory_path's answer,
// without calling into the filesystem library, for the reason above).
std::string temp_folder();

// Creates `path` holding `text` only if no such file exists (O_CREAT | O_EXCL:
// atomic on local, NFS and parallel file systems). False when it exists; any
// other failure is a DataError.
bool create_exclusive(const std::string& path, const std::string& text);

// A program's exit status once its standard output is flushed: `status`, or 1
// when it was 0 and what the program printed could not all be written (a full
// disk, `> /dev/full`), so that `dpstudy-analyze summary R > table.csv` does not
// leave a short table behind a success. The failure is told on stderr as `prog:
// error: ...` whatever the status. (Under mpirun the ranks write to mpirun's
// pipes, and mpirun itself writes the file.)
int stdout_exit_status(const std::string& prog, int status);

// Helpers for the big-endian integers of the IDX format.
std::uint32_t read_be32(const std::uint8_t* p);
void write_be32(std::uint8_t* p, std::uint32_t v);

}  // namespace dpstudy
