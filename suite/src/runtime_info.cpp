#include "dpstudy/runtime_info.hpp"

#include <torch/version.h>

#include <dlfcn.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dpstudy/config.hpp"
#if DPSTUDY_WITH_MPI
#include <mpi.h>
#endif

namespace dpstudy {

BlasInfo blas_info() {
  // Ask the dynamic linker which library provides sgemm_, the routine LibTorch's
  // CPU matrix products call. Debian's libblas.so.3 is an alternative that may be
  // the slow reference BLAS even when OpenBLAS is also loaded; realpath shows the
  // library it resolves to. A LibTorch linked statically against MKL (the PyTorch
  // wheels, Spack's py-torch +mkl) provides the symbol itself.
  BlasInfo info;
  void* sym = dlsym(RTLD_DEFAULT, "sgemm_");
  Dl_info where{};
  if (!sym || !dladdr(sym, &where) || !where.dli_fname) {
    info.library = "-";
    info.kind = "none found (sgemm_ not exported; LibTorch uses its own kernels)";
    return info;
  }
  char resolved[PATH_MAX];
  info.library = realpath(where.dli_fname, resolved) ? resolved : where.dli_fname;
  const std::string& l = info.library;
  auto has = [&l](const char* s) { return l.find(s) != std::string::npos; };
  if (has("openblas")) {
    info.kind = has("openmp") ? "OpenBLAS (OpenMP)" : has("pthread") ? "OpenBLAS (pthreads)" : "OpenBLAS";
  } else if (has("mkl")) {
    info.kind = "MKL";
  } else if (has("blis")) {
    info.kind = "BLIS";
  } else if (has("torch")) {
    info.kind = "built into LibTorch";
  } else if (has("libblas")) {
    info.kind = "reference BLAS";
    info.slow = true;
  } else {
    info.kind = "unknown";
  }
  return info;
}

std::string torch_version() { return TORCH_VERSION; }

std::string installed_share_dir() {
  char exe[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return "";
  exe[n] = '\0';
  std::string dir(exe);
  for (int up = 0; up < 2; ++up) {  // <prefix>/bin/dpstudy-x -> <prefix>
    const auto slash = dir.rfind('/');
    if (slash == std::string::npos) return "";
    dir.resize(slash);
  }
  const std::string share = dir + "/share/dpstudy";
  struct stat st {};
  return stat(share.c_str(), &st) == 0 && S_ISDIR(st.st_mode) ? share : "";
}

std::string mpi_library_version() {
#if DPSTUDY_WITH_MPI
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(text, &len);  // one of the few calls allowed before MPI_Init
  std::string v(text, std::size_t(len));
  const auto nl = v.find_first_of(",\n");
  return nl == std::string::npos ? v : v.substr(0, nl);
#else
  return "none (built without MPI)";
#endif
}

std::string host_name() {
  char host[256] = "";
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') return "unknown";
  host[sizeof host - 1] = '\0';
  return host;
}

int usable_cpus() {
#ifdef __linux__
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
#endif
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? int(online) : 1;
}

}  // namespace dpstudy
