// MNIST-format (IDX) reading: fixtures round-trip, and every kind of bad input
// gives a DataError that names the file.
#include <gtest/gtest.h>

#include "dpstudy/dataset.hpp"
#include "dpstudy/error.hpp"
#include "dpstudy/fixtures.hpp"
#include "dpstudy/idx.hpp"
#include "dpstudy/manifest.hpp"
#include "test_support.hpp"

using namespace dpstudy;
using dpstudy::test::idx_bytes;
using dpstudy::test::ScratchDir;
using dpstudy::test::write_bytes;

namespace {

// Expects load_dataset to throw a DataError whose message names `file` and holds `fragment`.
void expect_data_error(const std::string& data_dir, const std::string& file, const std::string& fragment,
                       Split split = Split::train) {
  LoadOptions opt;
  opt.data_dir = data_dir;
  try {
    load_dataset("mnist", split, opt);
    FAIL() << "no error; expected one naming " << file << " with '" << fragment << "'";
  } catch (const DataError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(file), std::string::npos) << what;
    EXPECT_NE(what.find(fragment), std::string::npos) << what;
  }
}

class IdxBadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    // A valid label file, so that each test breaks exactly one thing.
    labels_ = idx_bytes(0x801, {10}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
    write_bytes(dir_.path() / "mnist/train-labels-idx1-ubyte", labels_);
  }
  std::string images_path() const { return (dir_.path() / "mnist/train-images-idx3-ubyte").string(); }
  void write_images(std::uint32_t magic, std::vector<std::uint32_t> dims, std::size_t payload) {
    write_bytes(images_path(), idx_bytes(magic, dims, std::vector<std::uint8_t>(payload, 7)));
  }
  ScratchDir dir_;
  test::ScopedEnv no_env_{"DPSTUDY_DATA_DIR", nullptr};
  std::vector<std::uint8_t> labels_;
};

}  // namespace

TEST(Idx, FixturesLoadTheSameGzippedOrPlain) {
  test::ScopedEnv no_env("DPSTUDY_DATA_DIR", nullptr);
  ScratchDir gz, plain;
  write_fixtures(gz.str(), {600, 100, 7, true});
  write_fixtures(plain.str(), {600, 100, 7, false});
  EXPECT_TRUE(test::file_exists(gz.path() / "mnist/train-images-idx3-ubyte.gz"));
  EXPECT_TRUE(test::file_exists(plain.path() / "mnist/train-images-idx3-ubyte"));
  for (Split split : {Split::train, Split::test}) {
    const Dataset a = load_dataset("mnist", split, {gz.str()});
    const Dataset b = load_dataset("mnist", split, {plain.str()});
    const std::int64_t n = split == Split::train ? 600 : 100;
    EXPECT_EQ(a.size(), n);
    EXPECT_EQ(a.images.size(), std::size_t(n) * 28 * 28);  // [N, 1, 28, 28]
    EXPECT_EQ(a.images, b.images);
    EXPECT_EQ(a.labels, b.labels);
    std::vector<std::int64_t> per_class(10);
    for (std::int64_t label : a.labels) ++per_class.at(std::size_t(label));
    EXPECT_EQ(per_class, std::vector<std::int64_t>(10, n / 10));
    EXPECT_EQ(a.files[0].sha256, b.files[0].sha256);  // digests are of decompressed bytes
  }
}

TEST(Idx, FixturesAreDeterministicPerSeed) {
  ScratchDir a, b, c;
  write_fixtures(a.str(), {50, 10, 3, true});
  write_fixtures(b.str(), {50, 10, 3, true});
  write_fixtures(c.str(), {50, 10, 4, true});
  const Manifest ma = Manifest::load((a.path() / "manifest.tsv").string());
  const Manifest mb = Manifest::load((b.path() / "manifest.tsv").string());
  const Manifest mc = Manifest::load((c.path() / "manifest.tsv").string());
  ASSERT_EQ(ma.entries().size(), 14u);
  for (std::size_t i = 0; i < ma.entries().size(); ++i) {
    EXPECT_EQ(ma.entries()[i].sha256, mb.entries()[i].sha256);
    EXPECT_NE(ma.entries()[i].sha256, mc.entries()[i].sha256);
  }
}

TEST_F(IdxBadInput, WrongMagicNumber) {
  write_images(0x804, {10, 28, 28}, 10 * 784);
  expect_data_error(dir_.str(), images_path(), "wrong magic number 0x00000804, expected 0x00000803");
}

TEST_F(IdxBadInput, LabelFileGivenAsImageFile) {
  write_bytes(images_path(), labels_);
  expect_data_error(dir_.str(), images_path(), "wrong magic number 0x00000801");
}

TEST_F(IdxBadInput, TruncatedPlainFile) {
  write_images(0x803, {10, 28, 28}, 5 * 784);
  expect_data_error(dir_.str(), images_path(), "truncated: expected 7840 bytes of data");
}

TEST_F(IdxBadInput, TruncatedHeader) {
  write_bytes(images_path(), {0, 0, 8, 3, 0, 0});
  expect_data_error(dir_.str(), images_path(), "truncated");
}

TEST_F(IdxBadInput, TruncatedGzipFile) {
  const auto full = idx_bytes(0x803, {10, 28, 28}, std::vector<std::uint8_t>(10 * 784, 7));
  const auto gz_path = dir_.path() / "gz" / "train-images-idx3-ubyte.gz";
  write_bytes(gz_path, full, true);
  auto compressed = test::read_bytes(gz_path);
  compressed.resize(compressed.size() / 2);
  write_bytes(images_path() + ".gz", compressed);
  test::remove_file(images_path());  // only the .gz copy is there
  expect_data_error(dir_.str(), images_path() + ".gz", "truncated");
}

TEST_F(IdxBadInput, WrongDimensions) {
  write_images(0x803, {10, 27, 28}, 10 * 27 * 28);
  expect_data_error(dir_.str(), images_path(), "wrong dimensions: images are 27x28, expected 28x28");
}

TEST_F(IdxBadInput, BytesAfterTheDeclaredArray) {
  write_images(0x803, {10, 28, 28}, 10 * 784 + 3);
  expect_data_error(dir_.str(), images_path(), "has bytes after the 7840 the header declares");
}

TEST_F(IdxBadInput, LabelOutOfRange) {
  write_images(0x803, {10, 28, 28}, 10 * 784);
  const auto bad = idx_bytes(0x801, {10}, {0, 1, 2, 12, 4, 5, 6, 7, 8, 9});
  write_bytes(dir_.path() / "mnist/train-labels-idx1-ubyte", bad);
  expect_data_error(dir_.str(), "train-labels-idx1-ubyte",
                    "label 12 at index 3 is out of range, expected 0..9");
}

TEST_F(IdxBadInput, ImageAndLabelCountsDisagree) {
  write_images(0x803, {11, 28, 28}, 11 * 784);
  expect_data_error(dir_.str(), "train-labels-idx1-ubyte", "holds 10 labels but");
}

TEST_F(IdxBadInput, MissingFilesListEveryPlaceSearched) {
  test::remove_file(dir_.path() / "mnist/train-labels-idx1-ubyte");
  write_images(0x803, {10, 28, 28}, 10 * 784);
  LoadOptions opt;
  opt.data_dir = dir_.str();
  try {
    load_dataset("mnist", Split::train, opt);
    FAIL() << "expected a DataError";
  } catch (const DataError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("mnist: the train split was not found"), std::string::npos) << what;
    EXPECT_NE(what.find("--data-dir: " + dir_.str() + "/mnist (missing train-labels-idx1-ubyte[.gz])"),
              std::string::npos) << what;
    EXPECT_NE(what.find("DPSTUDY_DATA_DIR: not set"), std::string::npos) << what;
    EXPECT_NE(what.find("system: /usr/share/datasets/mnist"), std::string::npos) << what;
    EXPECT_NE(what.find("tools/fetch-datasets mnist"), std::string::npos) << what;
  }
  // A --data_dir that names a file says so, not "no such directory".
  opt.data_dir = (dir_.path() / "mnist/train-images-idx3-ubyte").string();
  try {
    load_dataset("mnist", Split::train, opt);
    FAIL() << "expected a DataError";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("--data-dir: " + opt.data_dir + " (not a directory)"), std::string::npos)
        << e.what();
  }
}

TEST(IdxChecksum, VerifiesAgainstManifestAndReportsBothDigests) {
  test::ScopedEnv no_env("DPSTUDY_DATA_DIR", nullptr);
  ScratchDir dir;
  write_fixtures(dir.str(), {50, 10, 1, false});
  const Manifest manifest = Manifest::load((dir.path() / "manifest.tsv").string());
  LoadOptions opt{dir.str(), true, &manifest};
  EXPECT_NO_THROW(load_dataset("mnist", Split::train, opt));

  // Same size, one pixel changed: only the digest can tell.
  const auto path = dir.path() / "mnist/train-images-idx3-ubyte";
  auto bytes = test::read_bytes(path);
  bytes[100] ^= 1;
  write_bytes(path, bytes);
  const ManifestEntry* entry = manifest.find("mnist", "train-images-idx3-ubyte");
  ASSERT_NE(entry, nullptr);
  try {
    load_dataset("mnist", Split::train, opt);
    FAIL() << "expected a checksum mismatch";
  } catch (const DataError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(path.string() + ": checksum mismatch: expected SHA-256 " + entry->sha256),
              std::string::npos) << what;
    EXPECT_NE(what.find("actual " + Sha256::of(bytes.data(), bytes.size())), std::string::npos) << what;
  }
  // Without verification the modified file still loads (it is well-formed).
  EXPECT_NO_THROW(load_dataset("mnist", Split::train, {dir.str()}));
}
