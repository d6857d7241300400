// The manifest of official dataset files (datasets/manifest.tsv): size and
// SHA-256 of the decompressed bytes, plus where the official archive is and the
// MD5 its authors publish for it. Shared with tools/fetch-datasets.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dpstudy/file_io.hpp"

namespace dpstudy {

struct ManifestEntry {
  std::string dataset;
  std::string file;         // decompressed file name
  std::uint64_t bytes = 0;  // decompressed size
  std::string sha256;       // of the decompressed bytes; empty: not recorded
  std::string archive;      // what is downloaded (.gz file or .tar.gz holding the file)
  std::string archive_md5;  // published by the dataset's authors; empty: none
  std::string base_url;     // archive URL = base_url + archive
};

class Manifest {
 public:
  // Parses tab- or space-separated rows; '#' starts a comment; '-' is an empty field.
  // `origin` names the text in errors (a path, or "built-in manifest").
  static Manifest parse(const std::string& text, const std::string& origin);
  static Manifest load(const std::string& path);
  // datasets/manifest.tsv as compiled into the library.
  static const Manifest& builtin();

  const ManifestEntry* find(const std::string& dataset, const std::string& file) const;
  const std::vector<ManifestEntry>& entries() const noexcept { return entries_; }
  const std::string& origin() const noexcept { return origin_; }

  enum class Check { match, unrecorded };
  // Compares size and SHA-256 of a file that was read. Throws DataError naming
  // the file, with expected and actual values, on a mismatch or when the file is
  // not in the manifest. Returns `unrecorded` when only the size could be checked.
  Check verify(const std::string& dataset, const FileRecord& file) const;

 private:
  std::string origin_;
  std::vector<ManifestEntry> entries_;
};

}  // namespace dpstudy
