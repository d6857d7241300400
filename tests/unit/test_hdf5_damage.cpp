// Damaged result files, byte by byte: a run file and an index (the real
// writers, a small run) go through the damage sweep (damage_sweep.hpp): every
// copy with one flipped bit must be refused or read exactly as the intact file.
// Before the texts' checksums and the global heap's check (hdf5_integrity.cpp), of 246
// copies damaged at every 97th byte of a run file, 4 were read with another
// text (a unit, a provenance value) and 1 crashed HDF5 1.10.8; then the index's
// text columns, variable-length, crashed it at a damaged reference into the
// heap (now fixed-length, under Fletcher32).
//
// The default run damages every 7th byte of the run file and every 13th of
// the index; DPSTUDY_DAMAGE_STRIDE=1 damages every byte (about a minute;
// docs/building.md). Checkpoints: test_checkpoint_damage.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "damage_sweep.hpp"
#include "dpstudy/hdf5.hpp"
#include "dpstudy/results.hpp"
#include "test_support.hpp"

using namespace dpstudy;
using namespace dpstudy::test;

namespace {

void write_small_run(const std::string& path) {
  RunRecord rec;
  rec.run_id = "r1";
  rec.study = "s";
  rec.workload = "mlp_mnist";
  rec.study_text = "[study]\nworkers = 2\n";
  rec.workers = 2;
  rec.config = {{"seed", std::int64_t(1)}, {"workers", std::int64_t(2)}, {"sync", std::string("local_sgd")},
                {"lr", 0.1}};
  rec.provenance = {{"host", std::string("node7")}, {"libtorch", std::string("1.13.0")}};
  RunResult& r = rec.result;
  r.train.step = {1, 2, 3};
  r.train.epoch = {0.5, 1, 1.5};
  r.train.loss = {2.3, 2.1, 1.9};
  r.train.lr = {0.1, 0.1, 0.1};
  r.train.samples = {32, 64, 96};
  r.train.time_s = {0.01, 0.02, 0.03};
  r.train.comm_s = {0, 0, 0};
  r.train.comm_bytes = {0, 0, 0};
  r.train.worker_loss = {2.3, 2.1, 1.9, 2.4, 2.2, 2.0};
  r.eval.step = {2, 3};
  r.eval.epoch = {1, 1.5};
  r.eval.test_loss = {2.0, 1.8};
  r.eval.test_accuracy = {0.4, 0.5};
  r.eval.val_loss = {std::nan(""), std::nan("")};
  r.eval.val_accuracy = {std::nan(""), std::nan("")};
  r.eval.train_loss = {2.2, 2.0};
  r.eval.worker_divergence = {0, 0.1};
  r.eval.synced = {1, 0};
  r.summary.final_test_accuracy = 0.5;
  r.summary.steps = 3;
  write_run_file(path, rec);
}

}  // namespace

TEST(Hdf5Damage, EveryFlippedBitOfARunFileIsRefusedOrHarmless) {
  ScratchDir scratch;
  const std::string path = scratch.str() + "/r1.h5";
  write_small_run(path);
  sweep(path, "run file", 7);
}

// The index: a column per key, texts among them, and links into the run files
// (not followed: the run files have their own sweep).
TEST(Hdf5Damage, EveryFlippedBitOfAnIndexIsRefusedOrHarmless) {
  ScratchDir scratch;
  make_dirs(scratch.path() / "runs");
  write_small_run(scratch.str() + "/runs/r1.h5");
  ASSERT_EQ(rebuild_index(scratch.str(), "s", nullptr), 1u);
  sweep(scratch.str() + "/index.h5", "index", 13);
}

namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_all(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// The Hdf5Error `read` throws, or "" when it reads.
template <typename Read>
std::string error_of(Read read) {
  try {
    read();
  } catch (const Hdf5Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// HDF5 keeps every text (attribute values, text columns, units) in a global
// heap that no checksum of its format covers: one damaged character there was
// read as another text. Each object's texts and each dataset's values carry a
// CRC-32 of their own (text_crc32, crc32), which the readers check.
TEST(Hdf5Damage, ADamagedTextIsRefusedWhereverItIs) {
  ScratchDir scratch;
  const std::string path = scratch.str() + "/t.h5";
  {
    h5::File f = h5::File::create(path);
    h5::Group config = f.root().create_group("config");
    config.set("sync", "local_sgd");
    config.set("workers", std::int64_t(2));
    f.root().write("ids", std::vector<std::string>{"run-alpha", "run-beta"});
    f.root().write("loss", std::vector<double>{1.0, 2.0}, "nats-unit");
    f.close();
  }
  const std::string bytes = read_all(path);
  {
    const h5::File f = h5::File::open_read(path);
    EXPECT_EQ(f.root().open_group("config").attr_names(), (std::vector<std::string>{"sync", "workers"}));
    EXPECT_EQ(f.root().open_group("config").get_string("sync"), "local_sgd");
    EXPECT_EQ(f.root().read_strings("ids"), (std::vector<std::string>{"run-alpha", "run-beta"}));
    EXPECT_EQ(f.root().dataset_units("loss"), "nats-unit");
  }
  const struct {
    const char* text;
    std::string (*read)(const h5::File&);
    const char* error;
  } cases[] = {
      {"local_sgd", [](const h5::File& f) { return f.root().open_group("config").get_string("sync"); },
       "the texts of /config do not match their checksum (a damaged file)"},
      {"run-beta", [](const h5::File& f) { return f.root().read_strings("ids")[1]; },
       "cannot read /ids: its values do not match their checksum (a damaged file)"},
      {"nats-unit", [](const h5::File& f) { return f.root().dataset_units("loss"); },
       "the texts of /loss do not match their checksum (a damaged file)"},
  };
  for (const auto& c : cases) {
    std::string damaged = bytes;
    const std::size_t at = damaged.find(c.text);
    ASSERT_NE(at, std::string::npos) << c.text;
    ASSERT_EQ(damaged.find(c.text, at + 1), std::string::npos) << c.text;
    damaged[at + 1] = char(damaged[at + 1] ^ 0x01);  // "lacal_sgd", "rtn-beta", "n`ts-unit"
    write_all(path, damaged);
    const h5::File f = h5::File::open_read(path);
    const std::string error = error_of([&] { c.read(f); });
    EXPECT_NE(error.find(c.error), std::string::npos) << c.text << ": " << error;
  }
}

// A global heap collection (where the texts are) has no checksum, and HDF5
// 1.10.8 trusted the sizes of its objects: a flipped bit in one made it read
// far outside the collection and crash. The collections are walked before
// HDF5 opens the file.
TEST(Hdf5Damage, AGlobalHeapObjectOfImpossibleSizeIsRefusedBeforeHdf5ReadsIt) {
  ScratchDir scratch;
  const std::string path = scratch.str() + "/g.h5";
  {
    h5::File f = h5::File::create(path);
    f.root().set("status", "completed");
    f.close();
  }
  std::string bytes = read_all(path);
  const std::size_t heap = bytes.find("GCOL");
  ASSERT_NE(heap, std::string::npos);
  // The collection's header (signature, version, 3 reserved bytes, its size: 8
  // bytes), then its first object: index (2), references (2), reserved (4), size (8).
  const std::size_t size_at = heap + 16 + 8;
  ASSERT_EQ(bytes[heap + 16], 1);  // object 1
  bytes[size_at + 6] = char(bytes[size_at + 6] ^ 0x40);
  write_all(path, bytes);
  const std::string error = error_of([&] { h5::File::open_read(path); });
  EXPECT_NE(error.find("cannot open: the global heap at byte " + std::to_string(heap) +
                       " (where HDF5 keeps texts) is damaged: an object is larger than its collection"),
            std::string::npos)
      << error;
  // Its size running past the end of the file.
  bytes = read_all(path);
  bytes[size_at + 6] = char(bytes[size_at + 6] ^ 0x40);
  bytes[heap + 8 + 3] = char(bytes[heap + 8 + 3] ^ 0x10);
  write_all(path, bytes);
  EXPECT_NE(error_of([&] { h5::File::open_read(path); }).find("is damaged: it runs past the end of the file"),
            std::string::npos);
}
