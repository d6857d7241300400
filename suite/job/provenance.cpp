// Where a job's processes compute and what result files record of it: a run
// file's /provenance (study_run.cpp) and a throughput table's (throughput_mode.cpp).
#include <algorithm>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "dpstudy/build_info.hpp"
#include "dpstudy/hdf5.hpp"
#include "dpstudy/runtime_info.hpp"
#include "job_context.hpp"

namespace dpstudy {
namespace {

// The distinct values of `by_rank` at `ranks`, in rank order, joined by `sep`.
std::string distinct_at(const std::vector<std::string>& by_rank, const std::vector<int>& ranks, const char* sep) {
  std::string out;
  std::set<std::string> seen;
  for (const int r : ranks) {
    const std::string& v = by_rank[std::size_t(r)];
    if (seen.insert(v).second) out += (out.empty() ? "" : sep) + v;
  }
  return out;
}

}  // namespace

std::string Places::hosts_of(const std::vector<int>& ranks) const { return distinct_at(hosts, ranks, ","); }
std::string Places::blas_build_of(const std::vector<int>& ranks) const {
  return distinct_at(blas_builds, ranks, " | ");
}
std::string Places::gpu_of(const std::vector<int>& ranks) const { return distinct_at(gpus, ranks, " | "); }
std::string Places::gpu_driver_of(const std::vector<int>& ranks) const {
  return distinct_at(gpu_drivers, ranks, " | ");
}
std::string Places::cpu_kernels_of(const std::vector<int>& ranks) const {
  return distinct_at(cpu_kernels, ranks, " | ");
}

Places gather_places(const Job& job) {
  const Session& session = job.session;
  Places p;
  const std::string mine = (session.active() ? session.host() : host_name()) + '\t' + blas_info().build + '\t' +
                           job.gpu + '\t' + job.gpu_driver + '\t' + job.cpu_kernels;
  for (const std::string& t : session.all_gather(mine)) {
    std::vector<std::string> fields;
    for (std::size_t from = 0;;) {
      const auto tab = t.find('\t', from);
      fields.push_back(t.substr(from, tab == std::string::npos ? tab : tab - from));
      if (tab == std::string::npos) break;
      from = tab + 1;
    }
    fields.resize(5);
    p.hosts.push_back(fields[0]);
    p.blas_builds.push_back(fields[1]);
    p.gpus.push_back(fields[2]);
    p.gpu_drivers.push_back(fields[3]);
    p.cpu_kernels.push_back(fields[4]);
  }
  // OpenBLAS picks its kernels by CPU, as ATen and oneDNN do theirs, LibTorch's CUDA libraries
  // theirs by GPU: nodes of two kinds compute with other bits.
  const auto warn_if_mixed = [&p](const std::vector<std::string>& by_rank, const std::string& verb,
                                  const std::string& what, const std::string& two) {
    std::map<std::string, std::vector<int>> by_value;
    for (std::size_t r = 0; r < by_rank.size(); ++r) by_value[by_rank[r]].push_back(int(r));
    if (by_value.size() < 2) return;
    // In the order of each value's first rank, as the run file's record: a sort by
    // value would put rank 1 first where its build's name sorts first (SkylakeX).
    std::vector<std::pair<std::string, std::vector<int>>> in_rank_order(by_value.begin(), by_value.end());
    std::sort(in_rank_order.begin(), in_rank_order.end(),
              [](const auto& a, const auto& b) { return a.second.front() < b.second.front(); });
    std::string list;
    for (const auto& [value, ranks] : in_rank_order) {
      std::string r;
      for (std::size_t i = 0; i < ranks.size() && i < 4; ++i) r += (i ? ", " : "") + std::to_string(ranks[i]);
      if (ranks.size() > 4) r += ", ... (" + std::to_string(ranks.size()) + " processes)";
      list += (list.empty() ? "" : "; ") + std::string(ranks.size() > 1 ? "ranks " : "rank ") + r + " on " +
              p.hosts_of(ranks) + ": " + value;
    }
    p.note += std::string(p.note.empty() ? "" : "\n") + "# warning: the job's processes " + verb + " " +
              std::to_string(by_value.size()) + " " + what + " (" + list + "): a run on processes of " + two +
              " does not give the bits of one process, and a run's bits depend on where it is placed (docs/mpi.md)";
  };
  warn_if_mixed(p.blas_builds, "call", "BLAS builds", "two builds");
  warn_if_mixed(p.gpus, "run on", "kinds of GPU", "two kinds");  // "none" for a process on the CPU
  warn_if_mixed(p.cpu_kernels, "use", "sets of CPU kernels", "two sets");
  return p;
}

KeyValues provenance(const Job& job, const Places& places, const std::vector<int>& ranks) {
  const BuildInfo b = build_info();
  std::string command;
  for (int i = 0; i < job.argc; ++i) command += (i ? " " : "") + std::string(job.argv[i]);
  const BlasInfo blas = blas_info();
  KeyValues out = {
      {"dpstudy_version", b.version},
      {"git_commit", b.git_commit},
      {"git_changes", b.git_changes},
      {"compiler", b.compiler},
      {"build_type", b.build_type},
      {"libtorch", torch_version()},
      {"mpi_library", mpi_library_version()},
      {"hdf5", h5::library_version()},
      {"blas", blas.kind + " " + blas.library},
      {"blas_build", places.blas_build_of(ranks)},
      {"cpu_kernels", places.cpu_kernels_of(ranks)},
      {"hostname", host_name()},
      {"hosts", places.hosts_of(ranks)},
      {"processes", std::int64_t(ranks.size())},
      {"device", job.device.str()},
      {"gpu", places.gpu_of(ranks)},
      {"gpu_driver", places.gpu_driver_of(ranks)},  // recorded, not warned of: the kernels come with LibTorch
      {"deterministic", std::int64_t(job.request.options.deterministic)},
      {"command_line", command},
  };
#if DPSTUDY_WITH_MPI
  out.emplace_back("mpi_cuda_aware", std::int64_t(mpi::cuda_aware()));
#endif
  return out;
}

}  // namespace dpstudy
