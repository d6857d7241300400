#include "dpstudy/dataset.hpp"

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "dpstudy/build_info.hpp"
#include "dpstudy/cifar10.hpp"
#include "dpstudy/error.hpp"
#include "dpstudy/idx.hpp"
#include "dpstudy/manifest.hpp"
#include "dpstudy/runtime_info.hpp"

namespace fs = std::filesystem;

namespace dpstudy {

std::vector<SearchRoot> search_roots(const std::string& data_dir_option) {
  const BuildInfo build = build_info();
  const char* env = std::getenv("DPSTUDY_DATA_DIR");
  return {
      {"--data-dir", data_dir_option},
      {"DPSTUDY_DATA_DIR", env ? env : ""},
      {"project", build.source_dir + "/datasets/data"},
      {"installed", (installed_share_dir().empty() ? build.install_datadir : installed_share_dir()) + "/data"},
      {"system", "/usr/share/datasets"},
  };
}

std::string data_dir_problem(const std::string& data_dir_option) {
  std::error_code ec;
  if (data_dir_option.empty() || fs::is_directory(data_dir_option, ec)) return {};
  return fs::exists(data_dir_option, ec) ? "is not a folder" : "does not exist";
}

void check_data_dir_option(const std::string& option, const std::string& data_dir_option) {
  if (const std::string why = data_dir_problem(data_dir_option); !why.empty()) {
    throw ConfigError(option, data_dir_option,
                      why + ": give the folder that holds the dataset's folder (mnist/, cifar10/, ...) or its files");
  }
}

namespace {

// The path of `file` in `dir`, plain or .gz; empty if neither exists.
std::string existing(const fs::path& dir, const std::string& file, DataFormat format) {
  std::error_code ec;
  if (fs::is_regular_file(dir / file, ec)) return (dir / file).string();
  if (format == DataFormat::idx && fs::is_regular_file(dir / (file + ".gz"), ec)) {
    return (dir / (file + ".gz")).string();
  }
  return {};
}

}  // namespace

std::string find_dataset_dir(const DatasetSpec& spec, Split split, const std::string& data_dir_option) {
  std::ostringstream searched;
  for (const SearchRoot& root : search_roots(data_dir_option)) {
    if (root.dir.empty()) {
      searched << "  " << root.origin << ": not set\n";
      continue;
    }
    for (const fs::path& dir : {fs::path(root.dir) / spec.name, fs::path(root.dir)}) {
      std::error_code ec;
      if (!fs::is_directory(dir, ec)) {
        const bool file = fs::exists(dir, ec);  // a --data_dir naming a file, say
        searched << "  " << root.origin << ": " << dir.string()
                 << (file ? " (not a directory)\n" : " (no such directory)\n");
        continue;
      }
      std::string missing;
      for (const auto& f : spec.files(split)) {
        if (existing(dir, f, spec.format).empty()) {
          missing += (missing.empty() ? "" : ", ") + f + (spec.format == DataFormat::idx ? "[.gz]" : "");
        }
      }
      if (missing.empty()) return dir.string();
      searched << "  " << root.origin << ": " << dir.string() << " (missing " << missing << ")\n";
    }
  }
  throw DataError(spec.name, "the " + to_string(split) +
                                 " split was not found. Searched, in order:\n" + searched.str() +
                                 "To obtain it: " + spec.obtain +
                                 ", or point --data-dir or DPSTUDY_DATA_DIR at a folder holding "
                                 "the files.");
}

namespace {

void check_dims(const IdxArray& a, const std::vector<std::int64_t>& expected_tail, const char* what) {
  const std::vector<std::int64_t> tail(a.dims.begin() + 1, a.dims.end());
  if (tail != expected_tail) {
    auto show = [](const std::vector<std::int64_t>& d) {
      std::string s;
      for (auto v : d) s += (s.empty() ? "" : "x") + std::to_string(v);
      return s;
    };
    throw DataError(a.file.path, std::string("wrong dimensions: ") + what + " are " + show(tail) +
                                     ", expected " + show(expected_tail));
  }
}

void check_labels(const std::vector<std::uint8_t>& labels, int classes, const std::string& path) {
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] >= classes) {
      throw DataError(path, "label " + std::to_string(int(labels[i])) + " at index " + std::to_string(i) +
                                " is out of range, expected 0.." + std::to_string(classes - 1));
    }
  }
}

void load_idx(const DatasetSpec& spec, Split split, Dataset& ds) {
  const auto& names = spec.files(split);
  IdxArray images = read_idx_ubyte(existing(ds.dir, names[0], spec.format), 3);
  check_dims(images, {spec.height, spec.width}, "images");
  IdxArray labels = read_idx_ubyte(existing(ds.dir, names[1], spec.format), 1);
  if (labels.dims[0] != images.dims[0]) {
    throw DataError(labels.file.path, "holds " + std::to_string(labels.dims[0]) + " labels but " +
                                          images.file.path + " holds " + std::to_string(images.dims[0]) +
                                          " images; the counts must agree");
  }
  check_labels(labels.data, spec.classes, labels.file.path);
  ds.images = std::move(images.data);  // [N, H, W] is [N, 1, H, W]
  ds.labels.assign(labels.data.begin(), labels.data.end());
  ds.files = {images.file, labels.file};
}

void load_cifar(const DatasetSpec& spec, Split split, Dataset& ds) {
  for (const auto& name : spec.files(split)) {
    CifarBatch b = read_cifar10_batch(existing(ds.dir, name, spec.format), spec.classes);
    ds.images.insert(ds.images.end(), b.images.begin(), b.images.end());
    ds.labels.insert(ds.labels.end(), b.labels.begin(), b.labels.end());
    ds.files.push_back(b.file);
  }
}

}  // namespace

Dataset load_dataset(const std::string& name, Split split, const LoadOptions& options) {
  const DatasetSpec& spec = dataset_spec(name);
  Dataset ds;
  ds.spec = &spec;
  ds.split = split;
  ds.dir = find_dataset_dir(spec, split, options.data_dir);
  if (spec.format == DataFormat::idx) {
    load_idx(spec, split, ds);
  } else {
    load_cifar(spec, split, ds);
  }
  if (options.verify) {
    const Manifest& manifest = options.manifest ? *options.manifest : Manifest::builtin();
    for (const auto& f : ds.files) manifest.verify(spec.name, f);
  }
  return ds;
}

}  // namespace dpstudy
