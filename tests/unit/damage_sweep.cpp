#include "damage_sweep.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "dpstudy/hdf5.hpp"

namespace dpstudy::test {
namespace {

std::string bits_of(double v) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &v, 8);
  return std::to_string(bits);
}

// Everything the file holds, as dpstudy's readers see it.
void dump_group(const h5::Group& g, const std::string& name, std::ostringstream& out) {
  out << "group " << name << "\n";
  for (const std::string& a : g.attr_names()) {
    const char kind = g.attr_kind(a);
    out << " attr " << a << " " << kind << " "
        << (kind == 's' ? g.get_string(a) : kind == 'i' ? std::to_string(g.get_int(a)) : bits_of(g.get_double(a)))
        << "\n";
  }
  for (const std::string& m : g.members()) {
    if (name == "/runs") continue;  // the index's links into the run files
    if (g.is_group(m)) {
      dump_group(g.open_group(m), name + "/" + m, out);
      continue;
    }
    char kind = '?';
    const std::vector<std::int64_t> shape = g.dataset_shape(m, &kind);
    out << " dataset " << m << " " << kind << " " << h5::shape_text(shape) << " units=" << g.dataset_units(m) << ":";
    if (kind == 's') {
      for (const std::string& s : g.read_strings(m)) out << " " << s;
    } else if (kind == 'i') {
      for (const std::int64_t v : g.read_ints(m)) out << " " << v;
    } else {
      for (const double v : g.read_doubles(m)) out << " " << bits_of(v);
    }
    out << "\n";
  }
}

// Which damaged copy a crash or a hang (SIGALRM) happened on, said before the
// test dies of it.
volatile std::size_t g_byte = 0;

void say_where_and_die(int sig) {
  char text[96];
  const int n = std::snprintf(text, sizeof text, "\ndamage sweep: signal %d reading the copy damaged at byte %zu\n", sig,
                              std::size_t(g_byte));
  if (n > 0 && ::write(2, text, std::size_t(n)) < 0) {
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

std::size_t from_env(const char* name, std::size_t otherwise) {
  const char* v = std::getenv(name);
  return v && *v ? std::size_t(std::strtoul(v, nullptr, 10)) : otherwise;
}

}  // namespace

std::string dump(const std::string& path) {
  std::ostringstream out;
  const h5::File f = h5::File::open_read(path);
  dump_group(f.root(), "", out);
  return out.str();
}

void sweep(const std::string& path, const std::string& what, std::size_t default_stride) {
  const std::string intact = dump(path), damaged = path + ".damaged.h5";
  if (const char* keep = std::getenv("DPSTUDY_DAMAGE_KEEP")) std::ofstream(keep, std::ios::binary) << std::ifstream(path, std::ios::binary).rdbuf();
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const std::size_t stride = std::max<std::size_t>(1, from_env("DPSTUDY_DAMAGE_STRIDE", default_stride));
  const std::size_t bit = from_env("DPSTUDY_DAMAGE_BIT", 8);  // 8: byte % 8
  for (const int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGALRM}) ::signal(sig, say_where_and_die);
  std::size_t same = 0, refused = 0;
  std::vector<std::string> read_differently;
  for (std::size_t at = 0; at < bytes.size(); at += stride) {
    std::string copy = bytes;
    copy[at] = char(copy[at] ^ (1 << (bit < 8 ? bit : at % 8)));
    {
      std::ofstream out(damaged, std::ios::binary | std::ios::trunc);
      out << copy;
    }
    g_byte = at;
    ::alarm(20);
    try {
      if (dump(damaged) == intact) {
        ++same;
      } else {
        read_differently.push_back(std::to_string(at));
      }
    } catch (const Hdf5Error&) {
      ++refused;
    } catch (const std::exception& e) {
      ADD_FAILURE() << what << ", byte " << at << ": " << e.what();
    }
    ::alarm(0);
  }
  for (const int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGALRM}) ::signal(sig, SIG_DFL);
  std::string listed;
  for (const std::string& b : read_differently) listed += " " + b;
  std::printf("%zu damaged copies of a %zu-byte %s: %zu read as before, %zu refused, %zu read as other values\n",
              (bytes.size() + stride - 1) / stride, bytes.size(), what.c_str(), same, refused,
              read_differently.size());
  EXPECT_TRUE(read_differently.empty()) << what << " read as other values, damaged at byte" << listed;
  EXPECT_GT(refused, same / 4);  // the damage is real: most of a result file is checksummed metadata
}

}  // namespace dpstudy::test
