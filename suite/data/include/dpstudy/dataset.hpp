// Named datasets (mnist, fashion-mnist, cifar10): where their files are looked
// for, and loading a whole split into one array of bytes, without LibTorch (the
// engine makes tensors of it: prepare_data, trainer.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dpstudy/dataset_spec.hpp"
#include "dpstudy/file_io.hpp"

namespace dpstudy {

class Manifest;

// One place where datasets are looked for, in order of precedence.
struct SearchRoot {
  std::string origin;  // "--data-dir", "DPSTUDY_DATA_DIR", "project", "installed", "system"
  std::string dir;     // empty when that origin is not set
};
// --data-dir (if given), $DPSTUDY_DATA_DIR, <source>/datasets/data,
// <prefix>/share/dpstudy/data, /usr/share/datasets.
std::vector<SearchRoot> search_roots(const std::string& data_dir_option);
// Why a --data-dir given cannot be looked in ("does not exist", "is not a folder"), or ""
// when it can (or none was given). The look-up would go on to the other roots, so a
// slip in its name would train on another copy of the data without a word.
std::string data_dir_problem(const std::string& data_dir_option);
// Throws ConfigError on `option` (data_dir, data-dir) when data_dir_problem names one.
void check_data_dir_option(const std::string& option, const std::string& data_dir_option);

// The first of <root>/<name> and <root> (over the roots in order) that holds
// every file of the split. Throws DataError listing every place searched, what
// was missing there, and how to obtain the data.
std::string find_dataset_dir(const DatasetSpec& spec, Split split,
                             const std::string& data_dir_option);

struct LoadOptions {
  std::string data_dir;               // --data-dir; empty: not given
  bool verify = false;                // check SHA-256 against the manifest
  const Manifest* manifest = nullptr; // nullptr: the built-in manifest
};

struct Dataset {
  const DatasetSpec* spec = nullptr;
  Split split = Split::train;
  std::string dir;
  std::vector<std::uint8_t> images;  // [N, C, H, W] row-major, as stored
  std::vector<std::int64_t> labels;  // [N], each in 0..classes-1
  std::vector<FileRecord> files;

  std::int64_t size() const { return std::int64_t(labels.size()); }
};

// Loads and checks a whole split: dimensions against the spec, equal image and
// label counts, labels in 0..classes-1; with `verify`, digests against the
// manifest. Every problem is a DataError naming the file.
Dataset load_dataset(const std::string& name, Split split, const LoadOptions& options = {});

}  // namespace dpstudy
