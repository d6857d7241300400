#include "dpstudy/manifest.hpp"

#include <fstream>
#include <sstream>

#include "dpstudy/error.hpp"

namespace dpstudy {

extern const char* const kBuiltinManifest;  // generated from datasets/manifest.tsv

namespace {

bool is_hex(const std::string& s, std::size_t n) {
  if (s.size() != n) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

Manifest Manifest::parse(const std::string& text, const std::string& origin) {
  Manifest m;
  m.origin_ = origin;
  std::istringstream lines(text);
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    const auto hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    std::istringstream fields(line);
    std::vector<std::string> f;
    for (std::string x; fields >> x;) f.push_back(x == "-" ? "" : x);
    if (f.empty()) continue;
    const std::string where = origin + ":" + std::to_string(number);
    if (f.size() != 7) {
      throw DataError(where, "expected 7 fields (dataset file bytes sha256 archive archive_md5 "
                             "base_url), found " + std::to_string(f.size()));
    }
    ManifestEntry e{f[0], f[1], 0, f[3], f[4], f[5], f[6]};
    try {
      std::size_t used = 0;
      e.bytes = std::stoull(f[2], &used);
      if (used != f[2].size()) throw std::invalid_argument("trailing characters");
    } catch (const std::exception&) {
      throw DataError(where, "bytes '" + f[2] + "' is not a whole number");
    }
    if (!e.sha256.empty() && !is_hex(e.sha256, 64)) {
      throw DataError(where, "sha256 '" + e.sha256 + "' is not 64 lowercase hex digits");
    }
    if (!e.archive_md5.empty() && !is_hex(e.archive_md5, 32)) {
      throw DataError(where, "archive_md5 '" + e.archive_md5 + "' is not 32 lowercase hex digits");
    }
    m.entries_.push_back(std::move(e));
  }
  return m;
}

Manifest Manifest::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError(path, "cannot open manifest");
  std::ostringstream text;
  text << in.rdbuf();
  return parse(text.str(), path);
}

const Manifest& Manifest::builtin() {
  static const Manifest m = parse(kBuiltinManifest, "built-in manifest (datasets/manifest.tsv)");
  return m;
}

const ManifestEntry* Manifest::find(const std::string& dataset, const std::string& file) const {
  for (const auto& e : entries_) {
    if (e.dataset == dataset && e.file == file) return &e;
  }
  return nullptr;
}

Manifest::Check Manifest::verify(const std::string& dataset, const FileRecord& file) const {
  const ManifestEntry* e = find(dataset, file.name);
  if (!e) throw DataError(file.path, "is not in " + origin_ + " for dataset '" + dataset + "'");
  if (e->bytes != file.bytes) {
    throw DataError(file.path, "size mismatch: expected " + std::to_string(e->bytes) +
                                   " decompressed bytes (" + origin_ + "), found " +
                                   std::to_string(file.bytes));
  }
  if (e->sha256.empty()) return Check::unrecorded;
  if (e->sha256 != file.sha256) {
    throw DataError(file.path, "checksum mismatch: expected SHA-256 " + e->sha256 + " (" + origin_ +
                                   "), actual " + file.sha256 + " (of the decompressed bytes)");
  }
  return Check::match;
}

}  // namespace dpstudy
