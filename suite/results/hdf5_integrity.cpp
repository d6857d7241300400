// What refuses a damaged HDF5 file instead of reading other values from it, or
// crashing HDF5 (results/README.md#checksums): the CRC-32s of texts and values,
// the check of a dataset's chunk index, the walk of the global heaps before a
// file is opened, and the superblock checksum of an in-memory file's image.
#include <fcntl.h>
#include <hdf5.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "dpstudy/hdf5.hpp"
#include "hdf5_detail.hpp"

namespace dpstudy::h5::detail {

// zlib's CRC-32 (what Python's zlib.crc32 computes), continued from `crc`.
std::uint32_t crc32_update(std::uint32_t crc, const void* data, std::size_t n) {
  const auto* p = static_cast<const Bytef*>(data);
  while (n > 0) {
    const auto step = uInt(std::min<std::size_t>(n, std::size_t(1) << 30));
    crc = std::uint32_t(::crc32(uLong(crc), p, step));
    p += step;
    n -= step;
  }
  return crc;
}

// Texts are checksummed as each one's UTF-8 bytes followed by a zero byte.
std::uint32_t crc32_text(std::uint32_t crc, const char* s, std::size_t n) {
  return crc32_update(crc32_update(crc, s, n), "", 1);
}

std::uint32_t crc32_text(std::uint32_t crc, const std::string& s) { return crc32_text(crc, s.data(), s.size()); }

namespace {

// HDF5 keeps the characters of every text in a global heap, which no version
// of its format checksums: a damaged byte there was read as another text (a
// config value, a unit; tests/unit/test_hdf5_damage.cpp). So each object's
// texts carry one CRC-32 of their own, written with the file (seal_tree) and
// checked on reading.
std::uint32_t read_crc(hid_t obj, const std::string& path, const std::string& shown, const std::string& name) {
  Id attr(open_one_value(obj, path, shown, name), H5Aclose, path, "attribute " + name);
  Id type(H5Aget_type(attr), H5Tclose, path, "attribute type");
  std::uint32_t v = 0;
  if (kind_of(type) != 'i' || H5Aread(attr, H5T_NATIVE_UINT32, &v) < 0) {
    fail(path, "cannot read the checksum " + name + " of " + shown);
  }
  return v;
}

// The CRC-32 of an object's text attributes but text_crc32, in byte order of
// their names: each name and each value followed by a zero byte. `any`: there
// was at least one.
std::uint32_t texts_crc(hid_t obj, const std::string& path, const std::string& shown, bool* any) {
  std::uint32_t crc = 0;
  *any = false;
  for (const std::string& name : attribute_names(obj, path, shown)) {
    if (name == kTextCrc) continue;
    Id attr(H5Aopen(obj, name.c_str(), H5P_DEFAULT), H5Aclose, path, "no attribute " + name + " on " + shown);
    Id type(H5Aget_type(attr), H5Tclose, path, "attribute type");
    Id space(H5Aget_space(attr), H5Sclose, path, "attribute dataspace");
    if (kind_of(type) != 's' || H5Sget_simple_extent_npoints(space) != 1) continue;
    const std::string value = read_string_value(type, [&](hid_t mem, void* buf) { return H5Aread(attr, mem, buf); });
    if (value == "\x01") fail(path, "cannot read attribute " + name + " of " + shown);
    crc = crc32_text(crc32_text(crc, name), value);
    *any = true;
  }
  return crc;
}

void seal_texts(hid_t obj, const std::string& path, const std::string& shown) {
  bool any = false;
  const std::uint32_t crc = texts_crc(obj, path, shown, &any);
  if (any) write_attr(obj, path, kTextCrc, H5T_STD_U32LE, H5T_NATIVE_UINT32, &crc);
}

}  // namespace

void check_texts(hid_t obj, const std::string& path, const std::string& shown) {
  if (H5Aexists(obj, kTextCrc) <= 0) return;  // no texts, or an earlier build's file
  const std::uint32_t stored = read_crc(obj, path, shown, kTextCrc);
  bool any = false;
  if (texts_crc(obj, path, shown, &any) != stored) {
    throw Hdf5Error(path, "the texts of " + shown + " do not match their checksum (a damaged file)");
  }
}

// Writes text_crc32 on every object of the file below `group` that has texts.
void seal_tree(hid_t group, const std::string& path, const std::string& shown) {
  seal_texts(group, path, shown);
  std::vector<std::string> names;  // hard links only: an external one leads into another file
  auto cb = [](hid_t, const char* n, const H5L_info_t* info, void* out) -> herr_t {
    if (info->type == H5L_TYPE_HARD) static_cast<std::vector<std::string>*>(out)->push_back(n);
    return 0;
  };
  hsize_t idx = 0;
  check(H5Literate(group, H5_INDEX_NAME, H5_ITER_NATIVE, &idx, cb, &names), path, "cannot list " + shown);
  for (const std::string& name : names) {
    const std::string child = (shown == "/" ? "" : shown) + "/" + name;
    Id obj(H5Oopen(group, name.c_str(), H5P_DEFAULT), H5Oclose, path, "cannot open " + child);
    if (H5Iget_type(obj) == H5I_GROUP) {
      seal_tree(obj, path, child);
    } else {
      seal_texts(obj, path, child);
    }
  }
}

// The CRC-32 of `count` values of `mem_type` in the file's byte order
// (`file_type`): the same bytes on a little-endian host, converted on others.
std::uint32_t values_crc(hid_t file_type, hid_t mem_type, const void* data, hsize_t count, const std::string& path) {
  const std::size_t bytes = std::size_t(count) * H5Tget_size(mem_type);
  if (H5Tequal(file_type, mem_type) > 0) return crc32_update(0, data, bytes);
  std::vector<unsigned char> buf(std::size_t(count) * std::max(H5Tget_size(file_type), H5Tget_size(mem_type)));
  if (bytes > 0) std::memcpy(buf.data(), data, bytes);
  check(H5Tconvert(mem_type, file_type, std::size_t(count), buf.data(), nullptr, H5P_DEFAULT), path,
        "cannot checksum values");
  return crc32_update(0, buf.data(), std::size_t(count) * H5Tget_size(file_type));
}

// Refuses what was read from `ds` when `crc`, computed from it, is not its
// crc32 attribute (files of earlier builds have none).
void check_crc(hid_t ds, const std::string& path, const std::string& shown, std::uint32_t crc) {
  if (H5Aexists(ds, "crc32") > 0 && read_crc(ds, path, shown, "crc32") != crc) {
    throw Hdf5Error(path, "cannot read " + shown + ": its values do not match their checksum (a damaged file)");
  }
}

// check_crc of `n` numbers read from `ds` as `mem_type`.
void check_values_crc(hid_t ds, const std::string& path, const std::string& shown, hid_t mem_type, const void* values,
                      hsize_t n, hid_t dxpl) {
  if (H5Aexists(ds, "crc32") <= 0) return;
  Id file_type(H5Dget_type(ds), H5Tclose, path, "type of " + shown);
  if (H5Tequal(file_type, mem_type) > 0) {
    check_crc(ds, path, shown, crc32_update(0, values, std::size_t(n) * H5Tget_size(mem_type)));
  } else {  // converted on reading (integers read as reals): the stored bytes, read as they are
    std::vector<unsigned char> raw(std::size_t(n) * H5Tget_size(file_type));
    if (n > 0) check(H5Dread(ds, file_type, H5S_ALL, H5S_ALL, dxpl, raw.data()), path, "cannot read " + shown);
    check_crc(ds, path, shown, crc32_update(0, raw.data(), raw.size()));
  }
}

// The 1.8 file format does not checksum a chunked dataset's chunk index: a
// damaged one can place a chunk outside the dataset, and HDF5 then reads the
// fill value (zeros) without an error, or mark a chunk's checksum as skipped.
// So every chunk must lie within the dataset (as many as its extent needs) with
// no filter skipped. Found by flipping each byte of a run file's chunk indexes;
// what is left: a damaged chunk address that lands on zeros, whose Fletcher32
// sum is zero too (results/README.md).
void check_chunks(hid_t ds, hid_t space, const std::string& path, const std::string& shown) {
#if H5_VERSION_GE(1, 10, 5)
  Id dcpl(H5Dget_create_plist(ds), H5Pclose, path, "creation properties of " + shown);
  if (H5Pget_layout(dcpl) != H5D_CHUNKED) return;
  const int rank = H5Sget_simple_extent_ndims(space);
  std::vector<hsize_t> dims(std::size_t(std::max(rank, 0))), chunk(dims.size());
  if (rank < 1 || H5Sget_simple_extent_dims(space, dims.data(), nullptr) < 0 ||
      H5Pget_chunk(dcpl, rank, chunk.data()) != rank) {
    fail(path, "cannot read the layout of " + shown);
  }
  hsize_t expected = 1, chunks = 0;
  for (int i = 0; i < rank; ++i) expected *= chunk[i] ? (dims[i] + chunk[i] - 1) / chunk[i] : 0;
  // HDF5 1.14 refuses some damage to the index itself, 1.10 reads on.
  check(H5Dget_num_chunks(ds, space, &chunks), path, "cannot read " + shown + ": its chunk index is damaged");
  // HDF5 1.10.8 also trusts each chunk's stored size: a smaller one made it
  // copy the chunk past the end of its buffer (AddressSanitizer, tests/unit/
  // test_hdf5_damage.cpp). Under Fletcher32 alone, as dpstudy writes every
  // dataset, that size is the chunk's values and the 4 bytes of their sum.
  hsize_t stored = 0;
  unsigned flags = 0, filter_config = 0;
  std::size_t cd_count = 0;
  if (H5Pget_nfilters(dcpl) == 1 &&
      H5Pget_filter2(dcpl, 0, &flags, &cd_count, nullptr, 0, nullptr, &filter_config) == H5Z_FILTER_FLETCHER32) {
    Id type(H5Dget_type(ds), H5Tclose, path, "type of " + shown);
    stored = H5Tget_size(type);
    for (int i = 0; i < rank; ++i) stored *= chunk[i];
    stored += 4;
  }
  std::string damage;
  if (chunks != expected) {
    damage = std::to_string(chunks) + " chunk(s) within its extent, expected " + std::to_string(expected);
  }
  for (hsize_t i = 0; damage.empty() && i < chunks; ++i) {
    std::vector<hsize_t> offset(dims.size());
    unsigned skipped = 0;
    haddr_t address = 0;
    hsize_t bytes = 0;
    if (H5Dget_chunk_info(ds, space, i, offset.data(), &skipped, &address, &bytes) < 0 || skipped != 0) {
      damage = "a chunk unreadable or marked as not checksummed";
    } else if (stored != 0 && bytes != stored) {
      damage = "a chunk of " + std::to_string(bytes) + " bytes, expected " + std::to_string(stored);
    }
    for (std::size_t d = 0; damage.empty() && d < dims.size(); ++d) {
      if (chunk[d] == 0 || offset[d] % chunk[d] != 0 || offset[d] >= dims[d]) {
        damage = "a chunk placed outside the dataset";
      }
    }
  }
  if (!damage.empty()) {
    H5Eclear2(H5E_DEFAULT);
    throw Hdf5Error(path, "cannot read " + shown + ": its chunk index is damaged (" + damage + ")");
  }
#else
  (void)ds, (void)space, (void)path, (void)shown;
#endif
}

namespace {

// Bob Jenkins' lookup3 hash (hashlittle, public domain), which HDF5 uses for
// its metadata checksums.
std::uint32_t lookup3(const unsigned char* k, std::size_t length) {
  auto rot = [](std::uint32_t x, int n) { return (x << n) | (x >> (32 - n)); };
  auto word = [](const unsigned char* p) {
    return std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 | std::uint32_t(p[2]) << 16 | std::uint32_t(p[3]) << 24;
  };
  std::uint32_t a, b, c;
  a = b = c = 0xdeadbeefu + std::uint32_t(length);
  while (length > 12) {
    a += word(k), b += word(k + 4), c += word(k + 8);
    a -= c, a ^= rot(c, 4), c += b;
    b -= a, b ^= rot(a, 6), a += c;
    c -= b, c ^= rot(b, 8), b += a;
    a -= c, a ^= rot(c, 16), c += b;
    b -= a, b ^= rot(a, 19), a += c;
    c -= b, c ^= rot(b, 4), b += a;
    length -= 12, k += 12;
  }
  if (length == 0) return c;
  unsigned char tail[12] = {};
  std::memcpy(tail, k, length);
  a += word(tail), b += word(tail + 4), c += word(tail + 8);
  c ^= b, c -= rot(b, 14);
  a ^= c, a -= rot(c, 11);
  b ^= a, b -= rot(a, 25);
  c ^= b, c -= rot(b, 16);
  a ^= c, a -= rot(c, 4);
  b ^= a, b -= rot(a, 14);
  c ^= b, c -= rot(b, 24);
  return c;
}

// Reads `n` bytes at `at`; false at the end of the file or on an error.
bool read_at(int fd, std::uint64_t at, unsigned char* buf, std::size_t n) {
  while (n > 0) {
    const ssize_t got = ::pread(fd, buf, n, off_t(at));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    buf += got, at += std::uint64_t(got), n -= std::size_t(got);
  }
  return true;
}

std::uint64_t little_endian(const unsigned char* p, std::size_t bytes) {
  std::uint64_t v = 0;
  for (std::size_t i = bytes; i-- > 0;) v = v << 8 | p[i];
  return v;
}

}  // namespace

// HDF5 1.10.8's H5Fget_file_image writes the file's end into the image's
// version 2 superblock without updating its checksum, so the file would not
// open ("incorrect metadata checksum"). The superblock is the signature (8
// bytes), version, the sizes of offsets and lengths, flags, then four
// addresses and the checksum of all before it; recomputing it is a no-op
// where HDF5 got it right.
void mend_superblock_checksum(std::vector<char>& image) {
  static const char signature[8] = {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'};
  if (image.size() < 12 || std::memcmp(image.data(), signature, 8) != 0) return;
  const int version = image[8];
  const std::size_t offsets = std::size_t(static_cast<unsigned char>(image[9]));
  const std::size_t at = 12 + 4 * offsets;
  if ((version != 2 && version != 3) || image.size() < at + 4) return;
  const std::uint32_t sum = lookup3(reinterpret_cast<const unsigned char*>(image.data()), at);
  for (int i = 0; i < 4; ++i) image[at + std::size_t(i)] = char((sum >> (8 * i)) & 0xff);
}

// HDF5 1.10 trusts the sizes of the objects in a global heap collection (the
// store of texts, which its format does not checksum): one damaged size made
// it read outside the collection and crash, or loop (tests/unit/
// test_hdf5_damage.cpp; HDF5 1.14 refuses it). So every collection is walked
// here first, and one whose objects do not fit in it is refused. Collections
// are found by their signature; a "GCOL" in a dataset's values that is not
// one fails the version and reserved bytes that follow, which a real
// collection has as 1, 0, 0, 0.
void check_global_heaps(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;  // H5Fopen tells why
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return;
  const auto size = std::uint64_t(st.st_size);
  // The size of lengths, from a superblock at the start (where dpstudy writes it).
  unsigned char sb[16];
  if (!read_at(fd, 0, sb, sizeof sb) || std::memcmp(sb, "\x89HDF\r\n\x1a\n", 8) != 0) return;
  const std::size_t lengths = sb[8] >= 2 ? sb[10] : sb[14];
  if (lengths != 2 && lengths != 4 && lengths != 8) return;
  const std::size_t header = 8 + lengths, object_header = 8 + lengths;
  auto check_collection = [&](std::uint64_t at) {
    unsigned char h[16];
    if (!read_at(fd, at, h, header) || h[4] != 1 || h[5] != 0 || h[6] != 0 || h[7] != 0) return;
    const std::uint64_t bytes = little_endian(h + 8, lengths);
    auto damaged = [&](const std::string& what) {
      throw Hdf5Error(path, "cannot open: the global heap at byte " + std::to_string(at) +
                                " (where HDF5 keeps texts) is damaged: " + what);
    };
    if (bytes < header || bytes > size - at) damaged("it runs past the end of the file");
    std::vector<unsigned char> heap(static_cast<std::size_t>(bytes));
    if (!read_at(fd, at, heap.data(), heap.size())) return;
    for (std::uint64_t pos = header; bytes - pos >= object_header;) {
      const unsigned index = unsigned(heap[pos]) | unsigned(heap[pos + 1]) << 8;
      const std::uint64_t object = little_endian(&heap[pos + 8], lengths);
      if (object > bytes) damaged("an object is larger than its collection");
      const std::uint64_t need = index > 0 ? object_header + ((object + 7) & ~std::uint64_t(7)) : object;
      if (need == 0 || need > bytes - pos) damaged("an object runs past the end of its collection");
      pos += need;
    }
  };
  std::vector<unsigned char> block(static_cast<std::size_t>(std::min<std::uint64_t>(size, 1 << 20)));
  for (std::uint64_t at = 0; at < size;) {
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(block.size(), size - at));
    if (!read_at(fd, at, block.data(), n)) return;
    const unsigned char* const end = block.data() + n;
    for (const unsigned char* p = block.data();
         (p = static_cast<const unsigned char*>(::memmem(p, std::size_t(end - p), "GCOL", 4))) != nullptr; ++p) {
      check_collection(at + std::uint64_t(p - block.data()));
    }
    if (at + n >= size) break;
    at += n - 3;  // a signature across two blocks is found in the second
  }
}

}  // namespace dpstudy::h5::detail
