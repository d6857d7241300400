#include "dpstudy/fixtures.hpp"

#include <filesystem>
#include <fstream>
#include <vector>

#include "dpstudy/error.hpp"
#include "dpstudy/file_io.hpp"
#include "dpstudy/rng.hpp"
#include "dpstudy/sha256.hpp"

namespace fs = std::filesystem;

namespace dpstudy {
namespace {

// Balanced labels 0..9 in a seeded order.
std::vector<std::uint8_t> make_labels(std::int64_t n, Rng& rng) {
  std::vector<std::uint8_t> labels(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = std::uint8_t(i % 10);
  rng.shuffle(labels);
  return labels;
}

// One image: noise, plus a bright square whose place depends on the class and,
// for colour images, a class-dependent tint. Learnable, but not trivially.
void draw(std::uint8_t* px, int channels, int side, int label, Rng& rng) {
  const int block = side / 5;
  const int top = 2 + (label / 5) * (side / 2), left = 1 + (label % 5) * block;
  for (int c = 0; c < channels; ++c) {
    for (int y = 0; y < side; ++y) {
      for (int x = 0; x < side; ++x) {
        int v = int(rng.below(80));
        if (y >= top && y < top + block && x >= left && x < left + block - 1) v += 150;
        if (channels == 3 && c == label % 3) v += 20;
        px[(c * side + y) * side + x] = std::uint8_t(v > 255 ? 255 : v);
      }
    }
  }
}

struct Written {
  std::string dataset, file, archive;
  std::vector<std::uint8_t> bytes;
};

void put(const fs::path& dir, const std::string& dataset, const std::string& file,
         std::vector<std::uint8_t> bytes, bool gzip, const std::string& archive,
         std::vector<Written>& out) {
  OutputFile f((dir / (gzip ? file + ".gz" : file)).string(), gzip);
  f.write(bytes.data(), bytes.size());
  f.close();
  out.push_back({dataset, file, archive, std::move(bytes)});
}

void write_idx_split(const fs::path& dir, const std::string& dataset, const std::string& prefix,
                     std::int64_t n, bool gzip, Rng& rng, std::vector<Written>& out) {
  const std::vector<std::uint8_t> labels = make_labels(n, rng);
  std::vector<std::uint8_t> images(16 + std::size_t(n) * 28 * 28);
  write_be32(images.data(), 0x00000803);
  write_be32(images.data() + 4, std::uint32_t(n));
  write_be32(images.data() + 8, 28);
  write_be32(images.data() + 12, 28);
  for (std::int64_t i = 0; i < n; ++i) draw(images.data() + 16 + i * 784, 1, 28, labels[std::size_t(i)], rng);
  std::vector<std::uint8_t> label_file(8);
  write_be32(label_file.data(), 0x00000801);
  write_be32(label_file.data() + 4, std::uint32_t(n));
  label_file.insert(label_file.end(), labels.begin(), labels.end());
  const std::string img = prefix + "-images-idx3-ubyte", lab = prefix + "-labels-idx1-ubyte";
  put(dir, dataset, img, std::move(images), gzip, gzip ? img + ".gz" : img, out);
  put(dir, dataset, lab, std::move(label_file), gzip, gzip ? lab + ".gz" : lab, out);
}

void write_cifar_file(const fs::path& dir, const std::string& file, std::int64_t n, Rng& rng,
                      std::vector<Written>& out) {
  const std::vector<std::uint8_t> labels = make_labels(n, rng);
  std::vector<std::uint8_t> bytes(std::size_t(n) * 3073);
  for (std::int64_t i = 0; i < n; ++i) {
    std::uint8_t* rec = bytes.data() + i * 3073;
    rec[0] = labels[std::size_t(i)];
    draw(rec + 1, 3, 32, rec[0], rng);
  }
  put(dir, "cifar10", file, std::move(bytes), false, "cifar-10-binary.tar.gz", out);
}

void make_folder(const fs::path& d) {
  std::error_code ec;
  fs::create_directories(d, ec);
  if (ec) throw DataError(d.string(), "cannot create the folder: " + ec.message());
}

}  // namespace

void write_fixtures(const std::string& dir, const FixtureOptions& o) {
  if (o.train < 5 || o.test < 1) {
    throw UsageError("fixtures need at least 5 training and 1 test image (5 CIFAR-10 batches), got " +
                     std::to_string(o.train) + " and " + std::to_string(o.test));
  }
  constexpr std::int64_t kMost = 1000000;  // 3 GB of CIFAR-10 images per split; more is a typo
  if (o.train > kMost || o.test > kMost) {
    throw UsageError("fixtures hold at most " + std::to_string(kMost) + " images per split, got " +
                     std::to_string(o.train) + " and " + std::to_string(o.test));
  }
  std::vector<Written> written;
  Rng rng(o.seed);
  for (const char* name : {"mnist", "fashion-mnist"}) {
    const fs::path d = fs::path(dir) / name;
    make_folder(d);
    write_idx_split(d, name, "train", o.train, o.gzip, rng, written);
    write_idx_split(d, name, "t10k", o.test, o.gzip, rng, written);
  }
  const fs::path c = fs::path(dir) / "cifar10";
  make_folder(c);
  for (int b = 0; b < 5; ++b) {
    const std::int64_t n = o.train / 5 + (b < o.train % 5 ? 1 : 0);
    write_cifar_file(c, "data_batch_" + std::to_string(b + 1) + ".bin", n, rng, written);
  }
  write_cifar_file(c, "test_batch.bin", o.test, rng, written);

  std::string manifest =
      "# dpstudy fixtures: dataset file bytes sha256 archive archive_md5 base_url\n";
  for (const auto& w : written) {
    manifest += w.dataset + "\t" + w.file + "\t" + std::to_string(w.bytes.size()) + "\t" +
                Sha256::of(w.bytes.data(), w.bytes.size()) + "\t" + w.archive + "\t-\t-\n";
  }
  OutputFile m((fs::path(dir) / "manifest.tsv").string(), false);
  m.write(manifest.data(), manifest.size());
  m.close();
}

}  // namespace dpstudy
