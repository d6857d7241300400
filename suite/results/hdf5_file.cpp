// The HDF5 layer's files (dpstudy/hdf5.hpp): created in the checksummed 1.8
// format, sealed with their texts' checksums when written, checked before
// HDF5 opens them.
#include <hdf5.h>
#include <sys/stat.h>

#include <cerrno>
#include <vector>

#include "dpstudy/hdf5.hpp"
#include "hdf5_detail.hpp"

namespace dpstudy::h5 {

using namespace detail;

namespace {

// The file format of HDF5 1.8 (version 2 superblock and object headers), which
// checksums the file's metadata: a damaged header or attribute is then refused
// as one ("incorrect metadata checksum") instead of being decoded, where
// HDF5 1.10.8 was found to crash on one (tools/fuzz-inputs, docs/building.md).
// Readable by every HDF5 since 1.8 (h5py, pandas, h5dump).
void use_checksummed_format(hid_t fapl, const std::string& path) {
#if H5_VERSION_GE(1, 10, 2)
  check(H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_V18), path, "cannot choose the file format");
#else
  check(H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST), path, "cannot choose the file format");
#endif
}

// Every chunked dataset here is one chunk (write_dataset): its chunk index
// needs one entry, not room for 64 (HDF5's default, about 1.5 KB a dataset,
// which doubled the index file). Kept in the superblock's extension, which
// every HDF5 since 1.8 reads.
hid_t small_chunk_indexes(const std::string& path) {
  const hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
  if (fcpl < 0) fail(path, "file creation properties");
  if (H5Pset_istore_k(fcpl, 1) < 0) {
    H5Pclose(fcpl);
    fail(path, "cannot size the chunk indexes");
  }
  return fcpl;
}

// A new file (truncating one there) in the checksummed format, on disk or, with
// `in_memory`, in memory only (File::image gives its bytes).
hid_t create_file(const std::string& path, bool in_memory) {
  silence_library();
  Id fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, path, "file access properties");
  use_checksummed_format(fapl, path);
  if (in_memory) check(H5Pset_fapl_core(fapl, 1 << 20, /*backing_store=*/0), path, "in-memory driver");
  Id fcpl(small_chunk_indexes(path), H5Pclose, path, "file creation properties");
  const hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, fcpl, fapl);
  if (f < 0) fail(path, in_memory ? "cannot create an in-memory HDF5 file" : "cannot create HDF5 file");
  return f;
}

}  // namespace

File::File(hid id, std::string path, bool writable) : id_(id), path_(std::move(path)), writable_(writable) {}

File::File(File&& o) noexcept : id_(o.id_), path_(std::move(o.path_)), writable_(o.writable_) { o.id_ = -1; }

File::~File() {
  const auto held = hold();
  if (id_ >= 0) H5Fclose(hid_t(id_));
}

File File::create(const std::string& path) {
  const auto held = hold();
  return File(create_file(path, false), path, true);
}

File File::create_in_memory(const std::string& path) {
  const auto held = hold();
  return File(create_file(path, true), path, true);
}

File File::open_read(const std::string& path) {
  const auto held = hold();
  silence_library();
  check_global_heaps(path);
  Id fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, path, "file access properties");
#if H5_VERSION_GE(1, 12, 1) || (H5_VERS_MAJOR == 1 && H5_VERS_MINOR == 10 && H5_VERS_RELEASE >= 7)
  // No lock: dpstudy writes every file whole under a temporary name and renames
  // it (write_hdf5_atomically), never in place, so a reader cannot meet a
  // writer. HDF5's lock would only fail where the file system has none (NFS
  // without its lock daemon: ENOLCK, which HDF5's best effort does not ignore).
  check(H5Pset_file_locking(fapl, /*use_file_locking=*/false, /*ignore_when_disabled=*/true), path,
        "cannot turn file locking off");
#endif
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl);
  if (f < 0) {
    struct stat st {};
    // HDF5's own message for a missing file is a screenful about its drivers.
    if (::stat(path.c_str(), &st) != 0 && errno == ENOENT) {
      H5Eclear2(H5E_DEFAULT);
      throw Hdf5Error(path, "no such file");
    }
    if (S_ISDIR(st.st_mode)) {  // and for a folder, one about reading 8 bytes from it
      H5Eclear2(H5E_DEFAULT);
      throw Hdf5Error(path, "is a folder, not an HDF5 file");
    }
    fail(path, "cannot open as an HDF5 file (truncated or not HDF5)");
  }
  return File(f, path, false);
}

Group File::root() const {
  const auto held = hold();
  const hid_t g = H5Gopen2(hid_t(id_), "/", H5P_DEFAULT);
  if (g < 0) fail(path_, "cannot open the root group");
  return Group(g, path_, "");
}

void File::seal() {
  const auto held = hold();
  Id root(H5Gopen2(hid_t(id_), "/", H5P_DEFAULT), H5Gclose, path_, "cannot open the root group");
  seal_tree(root, path_, "/");
}

std::vector<char> File::image() {
  const auto held = hold();
  if (writable_) seal();
  check(H5Fflush(hid_t(id_), H5F_SCOPE_GLOBAL), path_, "cannot flush the in-memory file");
  const ssize_t size = H5Fget_file_image(hid_t(id_), nullptr, 0);
  if (size < 0) fail(path_, "cannot size the file image");
  std::vector<char> bytes(static_cast<std::size_t>(size));
  if (H5Fget_file_image(hid_t(id_), bytes.data(), bytes.size()) < 0) fail(path_, "cannot copy the file image");
  mend_superblock_checksum(bytes);
  return bytes;
}

void File::close() {
  const auto held = hold();
  if (id_ < 0) return;
  if (writable_) {
    try {
      seal();
    } catch (...) {
      H5Fclose(hid_t(id_));
      id_ = -1;
      throw;
    }
  }
  const hid_t f = hid_t(id_);
  id_ = -1;
  if (H5Fflush(f, H5F_SCOPE_GLOBAL) < 0) {
    H5Fclose(f);
    fail(path_, "cannot write (disk full?)");
  }
  check(H5Fclose(f), path_, "cannot close (disk full?)");
}

}  // namespace dpstudy::h5
