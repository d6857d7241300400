// The study index kept between rebuilds (StudyIndex): the rows it serves from
// memory must be those a rebuild from scratch reads, and a run file is read
// again exactly when it changed.
#include <gtest/gtest.h>

#include <fstream>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

#include "dpstudy/hdf5.hpp"
#include "dpstudy/results.hpp"
#include "test_support.hpp"

using namespace dpstudy;
using namespace dpstudy::test;

namespace {

// A small complete run: `accuracy` and the config value `k` tell runs apart.
void write_run(const std::string& study_dir, const std::string& id, double accuracy, ConfigValue k) {
  RunRecord rec;
  rec.run_id = id;
  rec.study = "s";
  rec.workload = "w";
  rec.study_text = "[study]\n";
  rec.config = {{"seed", std::int64_t(1)}, {"k", k}};
  rec.provenance = {{"host", std::string("h")}};
  RunResult& r = rec.result;
  r.train.step = {1, 2};
  r.train.epoch = {0.5, 1};
  r.train.loss = {2.3, 2.1};
  r.train.lr = {0.1, 0.1};
  r.train.samples = {32, 64};
  r.train.time_s = {0.01, 0.02};
  r.train.comm_s = {0, 0};
  r.train.comm_bytes = {0, 0};
  r.train.worker_loss = {2.3, 2.1};
  r.eval.step = {2};
  r.eval.epoch = {1};
  r.eval.test_loss = {2.0};
  r.eval.test_accuracy = {accuracy};
  r.eval.val_loss = {std::nan("")};
  r.eval.val_accuracy = {std::nan("")};
  r.eval.train_loss = {2.2};
  r.eval.worker_divergence = {0};
  r.eval.synced = {1};
  r.summary.final_test_accuracy = accuracy;
  r.summary.steps = 2;
  make_dirs(study_dir + "/runs");
  write_run_file(study_dir + "/runs/" + id + ".h5", rec);
}

std::vector<double> index_doubles(const std::string& study_dir, const std::string& column) {
  const h5::File f = h5::File::open_read(study_dir + "/index.h5");
  return f.root().open_group("index").read_doubles(column);
}

std::vector<std::string> index_ids(const std::string& study_dir) {
  const h5::File f = h5::File::open_read(study_dir + "/index.h5");
  return f.root().open_group("index").read_strings("run_id");
}

}  // namespace

TEST(StudyIndex, ReadsEachRunFileOnceAndMatchesARebuildFromScratch) {
  ScratchDir dir;
  const std::string study = dir.str();
  write_bytes(study + "/runs/notes.txt", {'x'});  // not a run file
  write_run(study, "b2", 0.5, std::int64_t(2));
  write_run(study, "a1", 0.25, std::int64_t(1));
  StudyIndex index(study, "s");
  EXPECT_EQ(index.rebuild(nullptr), 2u);
  EXPECT_EQ(index.files_read(), 2u);
  write_run(study, "c3", 0.75, std::int64_t(3));
  EXPECT_EQ(index.rebuild(nullptr), 3u);
  EXPECT_EQ(index.files_read(), 3u);  // only the new file
  EXPECT_EQ(index.rebuild(nullptr), 3u);
  EXPECT_EQ(index.files_read(), 3u);

  const auto ids = index_ids(study);
  const auto acc = index_doubles(study, "final_test_accuracy");
  EXPECT_EQ(ids, (std::vector<std::string>{"a1", "b2", "c3"}));  // sorted by run id, not by finishing order
  EXPECT_EQ(acc, (std::vector<double>{0.25, 0.5, 0.75}));
  ASSERT_EQ(rebuild_index(study, "s", nullptr), 3u);
  EXPECT_EQ(index_ids(study), ids);
  EXPECT_EQ(index_doubles(study, "final_test_accuracy"), acc);
}

TEST(StudyIndex, ReadsAgainARunFileThatWasRewrittenAndDropsADeletedOne) {
  ScratchDir dir;
  const std::string study = dir.str();
  write_run(study, "a1", 0.25, std::int64_t(1));
  write_run(study, "b2", 0.5, std::int64_t(2));
  StudyIndex index(study, "s");
  ASSERT_EQ(index.rebuild(nullptr), 2u);

  write_run(study, "a1", 0.9, std::int64_t(1));  // a rerun (--force): a new file under the same name
  EXPECT_EQ(index.rebuild(nullptr), 2u);
  EXPECT_EQ(index.files_read(), 3u);
  EXPECT_EQ(index_doubles(study, "final_test_accuracy"), (std::vector<double>{0.9, 0.5}));

  ASSERT_EQ(::unlink((study + "/runs/b2.h5").c_str()), 0);
  EXPECT_EQ(index.rebuild(nullptr), 1u);
  EXPECT_EQ(index_ids(study), (std::vector<std::string>{"a1"}));
}

TEST(StudyIndex, ListsACorruptFileAtEveryRebuildButReadsItOnce) {
  ScratchDir dir;
  const std::string study = dir.str();
  write_run(study, "a1", 0.25, std::int64_t(1));
  write_bytes(study + "/runs/bad.h5", {'n', 'o', 't', ' ', 'h', 'd', 'f'});
  StudyIndex index(study, "s");
  for (int round = 0; round < 2; ++round) {
    std::vector<std::string> skipped;
    EXPECT_EQ(index.rebuild(&skipped), 1u);
    ASSERT_EQ(skipped.size(), 1u);
    EXPECT_NE(skipped[0].find("bad.h5"), std::string::npos) << skipped[0];
  }
  EXPECT_EQ(index.files_read(), 2u);
}

TEST(StudyIndex, AnIntegerColumnMeetingAStringBecomesFloatsWithNaN) {
  ScratchDir dir;
  const std::string study = dir.str();
  write_run(study, "a1", 0.25, std::int64_t(7));
  write_run(study, "b2", 0.5, std::string("seven"));
  StudyIndex index(study, "s");
  ASSERT_EQ(index.rebuild(nullptr), 2u);
  const auto k = index_doubles(study, "k");
  ASSERT_EQ(k.size(), 2u);
  EXPECT_EQ(k[0], 7.0);
  EXPECT_TRUE(std::isnan(k[1]));
}

TEST(Hdf5, DatasetUnitsAreReadBackAndEmptyWithout) {
  ScratchDir scratch;
  const std::string dir = scratch.str();
  {
    h5::File f = h5::File::create(dir + "/u.h5");
    h5::Group g = f.root();
    g.write("with", std::vector<double>{1.0}, "L2 norm");
    g.write("without", std::vector<double>{1.0});
  }
  const h5::File f = h5::File::open_read(dir + "/u.h5");
  EXPECT_EQ(f.root().dataset_units("with"), "L2 norm");
  EXPECT_EQ(f.root().dataset_units("without"), "");
  EXPECT_THROW(f.root().dataset_units("absent"), Hdf5Error);
}

TEST(Hdf5, AMissingOrForeignFileSaysWhichInOneLine) {
  ScratchDir scratch;
  const std::string missing = scratch.str() + "/absent.h5", text = scratch.str() + "/text.h5";
  try {
    (void)h5::File::open_read(missing);
    FAIL() << "expected an Hdf5Error";
  } catch (const Hdf5Error& e) {
    EXPECT_EQ(std::string(e.what()), missing + ": no such file");  // not HDF5's stack of driver errors
  }
  std::ofstream(text) << "not HDF5";
  try {
    (void)h5::File::open_read(text);
    FAIL() << "expected an Hdf5Error";
  } catch (const Hdf5Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind(text + ": cannot open as an HDF5 file (truncated or not HDF5)", 0), 0u)
        << e.what();
  }
  try {  // a folder given for a file: HDF5 says it read -1 bytes of a signature
    (void)h5::File::open_read(scratch.str());
    FAIL() << "expected an Hdf5Error";
  } catch (const Hdf5Error& e) {
    EXPECT_EQ(std::string(e.what()), scratch.str() + ": is a folder, not an HDF5 file");
  }
}

// The NaNs of one run made in two process layouts differ in sign and payload
// (which operand of a commutative sum was a NaN): stored as one NaN, they agree.
TEST(Hdf5, EveryNaNIsStoredAsTheOneQuietNaN) {
  const auto bits = [](double v) {
    std::uint64_t b = 0;
    std::memcpy(&b, &v, sizeof b);
    return b;
  };
  const auto nan_with = [](std::uint64_t b) {
    double v = 0;
    std::memcpy(&v, &b, sizeof v);
    return v;
  };
  const double odd = nan_with(0xfff8000000000001ULL), other = nan_with(0x7ff0000000000abcULL);
  ScratchDir scratch;
  const std::string path = scratch.str() + "/n.h5";
  {
    h5::File f = h5::File::create(path);
    h5::Group g = f.root();
    g.write("column", std::vector<double>{1.5, odd, other});
    g.write_matrix("matrix", std::vector<double>{odd, 2.0}, 1, 2);
    g.set("attribute", other);
  }
  const h5::File f = h5::File::open_read(path);
  const std::uint64_t quiet = 0x7ff8000000000000ULL;
  const std::vector<double> column = f.root().read_doubles("column"), matrix = f.root().read_doubles("matrix");
  EXPECT_EQ(column[0], 1.5);
  EXPECT_EQ(bits(column[1]), quiet);
  EXPECT_EQ(bits(column[2]), quiet);
  EXPECT_EQ(bits(matrix[0]), quiet);
  EXPECT_EQ(matrix[1], 2.0);
  EXPECT_EQ(bits(f.root().get_double("attribute")), quiet);
}

// Every numeric dataset carries its values' Fletcher32 checksum: a flipped bit
// in one is refused on reading, naming the dataset, where it was read as
// another number. Empty and text datasets are written and read as before.
TEST(Hdf5, ADamagedValueIsRefused) {
  ScratchDir scratch;
  const std::string path = scratch.str() + "/d.h5";
  const std::vector<double> values = {1.0, 2.0, 3.0};
  {
    h5::File f = h5::File::create(path);
    h5::Group g = f.root();
    g.write("column", values);
    g.write("empty", std::vector<double>{});
    g.write("text", std::vector<std::string>{"a", "b"});
  }
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const std::string stored(reinterpret_cast<const char*>(values.data()), sizeof(double) * values.size());
  const std::size_t at = bytes.find(stored);
  ASSERT_NE(at, std::string::npos);
  EXPECT_EQ(h5::File::open_read(path).root().read_doubles("column"), values);
  bytes[at + 8 + 3] = char(bytes[at + 8 + 3] ^ 0x20);  // the second value's fourth byte
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << bytes;
  }
  const h5::File f = h5::File::open_read(path);
  try {
    f.root().read_doubles("column");
    FAIL() << "a damaged value was read";
  } catch (const Hdf5Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot read /column: its values do not match their checksum (a damaged "
                                         "file)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(f.root().read_doubles("empty").empty());
  EXPECT_EQ(f.root().read_strings("text"), (std::vector<std::string>{"a", "b"}));
}

// The chunk index, which the file format does not checksum: a damaged key put
// the one chunk beyond the dataset, and HDF5 read zeros for it without an error.
TEST(Hdf5, ADamagedChunkIndexIsRefused) {
  ScratchDir scratch;
  const std::string path = scratch.str() + "/c.h5";
  {
    h5::File f = h5::File::create(path);
    f.root().write("column", std::vector<double>{1.0, 2.0, 3.0});
  }
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  // A version 1 B-tree node: "TREE", type, level, entries (2), two sibling
  // addresses (8 each), then the first key: chunk size (4), filter mask (4) and
  // the chunk's offset in each dimension (8 each).
  const std::size_t tree = bytes.find("TREE");
  ASSERT_NE(tree, std::string::npos);
  ASSERT_EQ(bytes.find("TREE", tree + 1), std::string::npos);
  // The offset 0 made 16 (HDF5 reads offsets 1 and 2 as the chunk at 0: no
  // harm), and the filter mask marking the checksum as skipped.
  for (const std::size_t at : {tree + 32, tree + 28}) {
    std::string damaged = bytes;
    damaged[at] = char(damaged[at] ^ (at == tree + 32 ? 0x10 : 0x01));
    {
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out << damaged;
    }
    const h5::File f = h5::File::open_read(path);
    try {
      const std::vector<double> read = f.root().read_doubles("column");
      ADD_FAILURE() << "at " << at - tree << ": read " << read[0] << ", " << read[1] << ", " << read[2] << " from a damaged chunk index";
    } catch (const Hdf5Error& e) {
      EXPECT_NE(std::string(e.what()).find("cannot read /column: its chunk index is damaged"), std::string::npos)
          << e.what();
    }
  }
}
