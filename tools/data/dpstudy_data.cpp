// dpstudy-data: check the datasets dpstudy can find, verify them against the
// manifest, and write small fixture files for tests.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <boost/program_options.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>

#include "dpstudy/build_info.hpp"
#include "dpstudy/dataset.hpp"
#include "dpstudy/error.hpp"
#include "dpstudy/file_io.hpp"
#include "dpstudy/option_errors.hpp"
#include "dpstudy/fixtures.hpp"
#include "dpstudy/manifest.hpp"
#include "dpstudy/runtime_info.hpp"
#include "dpstudy/trainer.hpp"

namespace po = boost::program_options;
using namespace dpstudy;

namespace {

const char* kUsage = R"(usage:
  dpstudy-data summary [NAME...] [--data-dir DIR] [--verify] [--manifest FILE]
      Load the train and test splits of each dataset (default: all known ones
      that are present), check them and print one line per split.
  dpstudy-data verify NAME... [--data-dir DIR] [--manifest FILE]
      Check every file's size and SHA-256 (of the decompressed bytes) against
      the manifest.
  dpstudy-data make-fixtures DIR [--train N] [--test N] [--seed S] [--plain]
      Write small valid mnist, fashion-mnist and cifar10 files and their
      manifest.tsv under DIR (deterministic for a given seed).

Datasets: mnist, fashion-mnist, cifar10. Look-up order: --data-dir,
$DPSTUDY_DATA_DIR, the project's datasets/data, <prefix>/share/dpstudy/data,
/usr/share/datasets; in each, <root>/<name> and then <root> itself.
)";

void print_header() {
  const BuildInfo b = build_info();
  const BlasInfo blas = blas_info();
  std::printf("# dpstudy %s (commit %s, %s, %s)\n", b.version.c_str(), commit_line(b).c_str(),
              b.build_type.c_str(), b.compiler.c_str());
  std::printf("# LibTorch %s, %s, intra-op threads %d\n", torch_version().c_str(),
              mpi_library_version().c_str(), at::get_num_threads());
  std::printf("# BLAS: %s, %s (%s)\n", blas.kind.c_str(), blas.library.c_str(), blas.build.c_str());
  if (blas.slow) {
    std::printf("# WARNING: the reference BLAS is active; training runs about 15x slower. "
                "Install libopenblas0-openmp (tools/install-deps does).\n");
  }
}

std::string digest_status(const Dataset& ds, const Manifest& manifest) {
  int unrecorded = 0;
  for (const auto& f : ds.files) {
    if (manifest.verify(ds.spec->name, f) == Manifest::Check::unrecorded) ++unrecorded;
  }
  return unrecorded ? "size only" : "sha256 ok";
}

int summary(std::vector<std::string> names, const std::string& data_dir, bool verify,
            const Manifest& manifest) {
  const bool all = names.empty();
  if (all) {
    for (const auto& s : dataset_specs()) names.push_back(s.name);
  }
  print_header();
  std::printf("# %-13s %-5s %7s %-8s %7s %9s %9s %-22s %-22s %-11s %9s %11s %-10s %s\n", "dataset",
              "split", "images", "shape", "classes", "pixel min", "pixel max", "mean (per channel)",
              "std (per channel)", "per class", "load (ms)", "rate (MB/s)", "checksum", "folder");
  int loaded = 0;
  std::vector<std::string> absent, digests;
  for (const auto& name : names) {
    const DatasetSpec& spec = dataset_spec(name);
    std::vector<FileRecord> files;  // train, then test: as a run records them
    int splits = 0;
    for (Split split : {Split::train, Split::test}) {
      if (all) {
        try {
          find_dataset_dir(spec, split, data_dir);
        } catch (const DataError&) {
          absent.push_back(name + " " + to_string(split) + ": " + spec.obtain);
          continue;
        }
      }
      const auto t0 = std::chrono::steady_clock::now();
      LoadOptions opt;
      opt.data_dir = data_dir;
      const Dataset ds = load_dataset(name, split, opt);
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      double bytes = 0;
      for (const auto& f : ds.files) bytes += double(f.bytes);
      const at::Tensor images = image_tensor(ds);
      const at::Tensor x = images.to(at::kFloat).div_(255.0);
      const at::Tensor mean = x.mean({0, 2, 3}), stdev = x.std({0, 2, 3});
      std::string means, stds;
      char buf[32];
      for (int c = 0; c < spec.channels; ++c) {
        std::snprintf(buf, sizeof buf, "%s%.4f", c ? "," : "", mean[c].item<double>());
        means += buf;
        std::snprintf(buf, sizeof buf, "%s%.4f", c ? "," : "", stdev[c].item<double>());
        stds += buf;
      }
      const at::Tensor counts = at::bincount(label_tensor(ds), {}, spec.classes);
      std::snprintf(buf, sizeof buf, "%lld..%lld", (long long)counts.min().item<std::int64_t>(),
                    (long long)counts.max().item<std::int64_t>());
      const std::string shape = std::to_string(spec.channels) + "x" + std::to_string(spec.height) +
                                "x" + std::to_string(spec.width);
      std::printf("  %-13s %-5s %7lld %-8s %7d %9d %9d %-22s %-22s %-11s %9.1f %11.1f %-10s %s\n",
                  name.c_str(), to_string(split).c_str(), (long long)ds.size(), shape.c_str(),
                  spec.classes, images.min().item<int>(), images.max().item<int>(),
                  means.c_str(), stds.c_str(), buf, secs * 1e3, bytes / 1e6 / secs,
                  verify ? digest_status(ds, manifest).c_str() : "-", ds.dir.c_str());
      ++loaded;
      ++splits;
      files.insert(files.end(), ds.files.begin(), ds.files.end());
    }
    if (splits == 2) digests.push_back(name + " " + data_digest(checksum_lines(name, files)));
  }
  for (const auto& a : absent) std::printf("# not found: %s\n", a.c_str());
  // Which copy a study's runs were trained on: their index's data_digest column.
  for (const auto& d : digests) {
    std::printf("# data_digest (a study index's column for runs on these files): %s\n", d.c_str());
  }
  if (loaded == 0) {
    std::fprintf(stderr, "dpstudy-data: error: no dataset found; see `dpstudy-data summary NAME` "
                         "for the places searched\n");
    return 1;
  }
  return 0;
}

int verify(const std::vector<std::string>& names, const std::string& data_dir, const Manifest& manifest) {
  if (names.empty()) throw UsageError("verify needs at least one dataset name");
  std::printf("# manifest: %s\n", manifest.origin().c_str());
  std::printf("# %-13s %-5s %-25s %10s %-64s %s\n", "dataset", "split", "file", "size (B)",
              "sha256 (decompressed)", "status");
  for (const auto& name : names) {
    for (Split split : {Split::train, Split::test}) {
      LoadOptions opt;
      opt.data_dir = data_dir;
      const Dataset ds = load_dataset(name, split, opt);
      for (const auto& f : ds.files) {
        const bool full = manifest.verify(name, f) == Manifest::Check::match;
        std::printf("  %-13s %-5s %-25s %10llu %-64s %s\n", name.c_str(), to_string(split).c_str(),
                    f.name.c_str(), (unsigned long long)f.bytes, f.sha256.c_str(),
                    full ? "ok" : "size ok, no SHA-256 recorded");
      }
    }
  }
  return 0;
}

}  // namespace

static int data_main(int argc, char** argv) {
  try {
    std::string command, data_dir, manifest_path;
    std::vector<std::string> args;
    FixtureOptions fixtures;
    bool verify_digests = false, plain = false;
    po::options_description named("options");
    named.add_options()("help,h", "show usage")(
        "data-dir", po::value(&data_dir), "look here first for <name>/ folders or the files")(
        "manifest", po::value(&manifest_path), "manifest to verify against (default: built-in)")(
        "verify", po::bool_switch(&verify_digests), "summary: also verify checksums")(
        "train", po::value(&fixtures.train), "make-fixtures: training images")(
        "test", po::value(&fixtures.test), "make-fixtures: test images")(
        "seed", po::value(&fixtures.seed), "make-fixtures: seed")(
        "plain", po::bool_switch(&plain), "make-fixtures: IDX files without gzip");
    po::options_description hidden;
    hidden.add_options()("command", po::value(&command))("args", po::value(&args));
    po::positional_options_description positional;
    positional.add("command", 1).add("args", -1);
    po::options_description all;
    all.add(named).add(hidden);
    po::variables_map vm;
    // --data_dir too, as the workloads spell it.
    std::vector<std::string> words(argv + 1, argv + argc);
    for (std::string& w : words) {
      if (w.rfind("--", 0) == 0) std::replace(w.begin() + 2, std::find(w.begin(), w.end(), '='), '_', '-');
    }
    store_options(po::command_line_parser(words).options(all).positional(positional).run(), vm);
    po::notify(vm);
    if (vm.count("help") || command.empty()) {
      std::cout << kUsage << "\n" << named;
      return command.empty() && !vm.count("help") ? 2 : 0;
    }
    std::optional<Manifest> custom;
    if (!manifest_path.empty()) custom = Manifest::load(manifest_path);
    const Manifest& manifest = custom ? *custom : Manifest::builtin();
    check_data_dir_option("data-dir", data_dir);
    if (command == "summary") return summary(args, data_dir, verify_digests, manifest);
    if (command == "verify") return verify(args, data_dir, manifest);
    if (command == "make-fixtures") {
      if (args.size() != 1) throw UsageError("make-fixtures needs exactly one folder");
      fixtures.gzip = !plain;
      write_fixtures(args[0], fixtures);
      std::printf("wrote fixtures (%lld train, %lld test images, seed %llu) under %s\n",
                  (long long)fixtures.train, (long long)fixtures.test,
                  (unsigned long long)fixtures.seed, args[0].c_str());
      return 0;
    }
    throw UsageError("unknown command '" + command + "', expected summary, verify or make-fixtures");
  } catch (const po::error& e) {
    std::fprintf(stderr, "dpstudy-data: error: %s\n(see dpstudy-data --help)\n", e.what());
    return 2;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "dpstudy-data: error: %s\n(see dpstudy-data --help)\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dpstudy-data: error: %s\n", e.what());
    return 1;
  }
}

int main(int argc, char** argv) { return stdout_exit_status("dpstudy-data", data_main(argc, argv)); }
