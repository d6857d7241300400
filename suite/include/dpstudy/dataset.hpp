// Named datasets (mnist, fashion-mnist, cifar10): where their files are looked
// for, and loading a whole split into one contiguous uint8 tensor.
#pragma once

#include <ATen/core/Tensor.h>

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
  at::Tensor images;  // uint8 [N, C, H, W], contiguous, as stored
  at::Tensor labels;  // int64 [N]
  std::vector<FileRecord> files;

  std::int64_t size() const { return labels.size(0); }
  // Float32 [N, C, H, W] (or [index.size(0), ...] for a subset), normalised
  // with the spec's per-channel mean and std. Computed on demand.
  at::Tensor normalized() const;
  at::Tensor normalized(const at::Tensor& index) const;
};

// Loads and checks a whole split: dimensions against the spec, equal image and
// label counts, labels in 0..classes-1; with `verify`, digests against the
// manifest. Every problem is a DataError naming the file.
Dataset load_dataset(const std::string& name, Split split, const LoadOptions& options = {});

// Per-channel normalisation of a uint8 [N, C, H, W] tensor (see DatasetSpec).
at::Tensor normalize_images(const at::Tensor& images_u8, const DatasetSpec& spec);

}  // namespace dpstudy
