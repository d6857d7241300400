#include "dpstudy/mpi.hpp"

#include <ATen/ATen.h>
#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI's MPIX_Query_cuda_support
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "dpstudy/runtime_info.hpp"

namespace dpstudy {
namespace {

std::string processor_name() {
  char name[MPI_MAX_PROCESSOR_NAME] = "";
  int len = 0;
  MPI_Get_processor_name(name, &len);
  return std::string(name, std::size_t(len));
}

void check(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  MPI_Error_string(rc, text, &len);
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  throw MpiError("rank " + std::to_string(rank) + " on " + processor_name() + ": " + call + " failed: " +
                 std::string(text, std::size_t(len)));
}

static_assert(sizeof(MPI_Fint) <= sizeof(mpi::CommHandle), "a Fortran handle must fit in CommHandle");
MPI_Comm as_comm(mpi::CommHandle h) { return MPI_Comm_f2c(static_cast<MPI_Fint>(h)); }
mpi::CommHandle handle_of(MPI_Comm c) { return MPI_Comm_c2f(c); }

bool power_of_two(int k) { return k > 0 && (k & (k - 1)) == 0; }

// Kernels on a GPU run asynchronously: a blocking one-element copy waits for them
// before MPI reads device memory.
void device_sync(const at::Tensor& t) {
  if (!t.device().is_cpu() && t.numel() > 0) (void)t.narrow(0, 0, 1).to(at::kCPU);
}

// The part of an n-element buffer that rank `r` of `k` holds after recursive halving.
std::pair<std::int64_t, std::int64_t> segment(int r, int k, std::int64_t n) {
  std::int64_t lo = 0, hi = n;
  for (int d = 1; d < k; d <<= 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    if ((r & d) == 0) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  return {lo, hi};
}

}  // namespace

namespace mpi {

bool cuda_aware() {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  return MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}

Session::Session() {
  if (!launched_by_mpi()) return;
  check(MPI_Init(nullptr, nullptr), "MPI_Init");
  active_ = true;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  check(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
  MPI_Comm node;
  check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node),
        "MPI_Comm_split_type");
  MPI_Comm_rank(node, &local_rank_);
  MPI_Comm_size(node, &local_size_);
  MPI_Comm_free(&node);
  host_ = processor_name();
}

Session::~Session() {
  if (active_) MPI_Finalize();
}

void Session::abort(const std::string& message, int code) const {
  std::fprintf(stderr, "%s\n", message.c_str());
  std::fflush(nullptr);
  if (active_) {
    // Open MPI 5 prints its abort banner through another channel than this
    // process's stderr: at once, it lands in the middle of a long message
    // (seen on Debian 13). A moment lets the message through whole.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    MPI_Abort(MPI_COMM_WORLD, code);
  }
  std::exit(code);
}

void Session::broadcast(std::vector<std::int64_t>& values) const {
  if (!active_) return;
  long long n = (long long)values.size();
  check(MPI_Bcast(&n, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD), "MPI_Bcast");
  values.resize(std::size_t(n));
  check(MPI_Bcast(values.data(), int(n), MPI_INT64_T, 0, MPI_COMM_WORLD), "MPI_Bcast");
}

double Session::max(double value) const {
  if (!active_) return value;
  double out = value;
  check(MPI_Allreduce(&value, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
  return out;
}

std::vector<std::string> Session::all_gather(const std::string& text) const {
  if (!active_) return {text};
  const auto procs = std::size_t(size_);
  const int n = int(text.size());
  std::vector<int> sizes(procs, 0), offsets(procs, 0);
  check(MPI_Allgather(&n, 1, MPI_INT, sizes.data(), 1, MPI_INT, MPI_COMM_WORLD), "MPI_Allgather");
  for (std::size_t r = 1; r < procs; ++r) offsets[r] = offsets[r - 1] + sizes[r - 1];
  std::string all(std::size_t(offsets[procs - 1] + sizes[procs - 1]), '\0');
  check(MPI_Allgatherv(text.data(), n, MPI_CHAR, all.data(), sizes.data(), offsets.data(), MPI_CHAR, MPI_COMM_WORLD),
        "MPI_Allgatherv");
  std::vector<std::string> out;
  for (std::size_t r = 0; r < procs; ++r) out.push_back(all.substr(std::size_t(offsets[r]), std::size_t(sizes[r])));
  return out;
}

RunGroup::RunGroup(const std::vector<int>& ranks, int tag) {
  MPI_Group world, group;
  check(MPI_Comm_group(MPI_COMM_WORLD, &world), "MPI_Comm_group");
  check(MPI_Group_incl(world, int(ranks.size()), ranks.data(), &group), "MPI_Group_incl");
  MPI_Comm comm;
  check(MPI_Comm_create_group(MPI_COMM_WORLD, group, tag, &comm), "MPI_Comm_create_group");
  MPI_Group_free(&group);
  MPI_Group_free(&world);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm, &rank_);
  MPI_Comm_size(comm, &size_);
  comm_ = handle_of(comm);
}

void RunGroup::broadcast(long long& value) const {
  check(MPI_Bcast(&value, 1, MPI_LONG_LONG, 0, as_comm(comm_)), "MPI_Bcast");
}

RunGroup::~RunGroup() {
  MPI_Comm comm = as_comm(comm_);
  MPI_Comm_free(&comm);
}

}  // namespace mpi

MpiCommunicator::MpiCommunicator(const mpi::RunGroup& group, int workers)
    : comm_(group.handle()), workers_(workers), procs_(group.size()), rank_(group.rank()) {
  if (workers_ % procs_ != 0) {
    throw ConfigError("workers", std::to_string(workers_),
                      "must be a multiple of the processes per run (" + std::to_string(procs_) + ")");
  }
  local_ = workers_ / procs_;
  first_ = rank_ * local_;
}

MpiCommunicator::~MpiCommunicator() {
  for (auto& [size, comm] : group_comms_) {
    MPI_Comm c = as_comm(comm);
    MPI_Comm_free(&c);
  }
}

std::vector<double> MpiCommunicator::all_workers(const std::vector<double>& local) {
  std::vector<double> all(static_cast<std::size_t>(workers_));
  check(MPI_Allgather(local.data(), local_, MPI_DOUBLE, all.data(), local_, MPI_DOUBLE, as_comm(comm_)),
        "MPI_Allgather");
  return all;
}

int MpiCommunicator::agree(int flags) {
  int all = 0;
  check(MPI_Allreduce(&flags, &all, 1, MPI_INT, MPI_BOR, as_comm(comm_)), "MPI_Allreduce");
  return all;
}

void MpiCommunicator::mean(const std::vector<at::Tensor>& local, int first, int count, at::Tensor& out) {
  if (out.scalar_type() != at::kFloat || !out.is_contiguous()) {
    throw MpiError("MpiCommunicator::mean: expects contiguous float32 buffers");
  }
  if (count == workers_) {
    reduce_over(comm_, procs_, rank_, local, count, out, scratch_);
    return;
  }
  if (count > local_) {
    // A group spanning whole processes: its own sub-communicator, made at the
    // first averaging (every process is here then: the caller loops over all groups).
    if (count % local_ != 0 || first % local_ != 0) {
      throw ConfigError("group_size", std::to_string(count),
                        "must divide, or be a multiple of, the workers per process (" + std::to_string(local_) + ")");
    }
    auto sub = std::find_if(group_comms_.begin(), group_comms_.end(), [&](const auto& g) { return g.first == count; });
    if (sub == group_comms_.end()) {
      MPI_Comm c;
      check(MPI_Comm_split(as_comm(comm_), first_ / count, rank_, &c), "MPI_Comm_split");
      MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
      sub = group_comms_.emplace(group_comms_.end(), count, handle_of(c));
    }
    if (first_ / count != first / count) return;  // another group's averaging
    int r = 0, k = 1;
    MPI_Comm_rank(as_comm(sub->second), &r);
    MPI_Comm_size(as_comm(sub->second), &k);
    reduce_over(sub->second, k, r, local, count, out, scratch_);
    return;
  }
  if (first + count <= first_ || first >= first_ + local_) return;  // hosted elsewhere
  if (first < first_ || first + count > first_ + local_) {
    throw ConfigError("group_size", std::to_string(count),
                      "must divide, or be a multiple of, the workers per process (" + std::to_string(local_) + ")");
  }
  tree_sum(local, first - first_, first - first_ + count, out, scratch_);
  divide_by_count(out, count);
}

void MpiCommunicator::reduce_over(mpi::CommHandle comm_handle, int k, int r, const std::vector<at::Tensor>& local,
                                  int count, at::Tensor& out, std::vector<at::Tensor>& scratch) {
  if (!out.device().is_cpu() && !mpi::cuda_aware()) {
    // Through host memory: the same arithmetic (the tree's additions run on the
    // CPU here instead of the GPU, which gives the same IEEE results). Only an
    // exchange pays the copies: a group within this process, or another
    // process's, stays on the device. Host scratch of its own, so that a run
    // with both does not move scratch_ between the devices at each averaging.
    std::vector<at::Tensor> host;
    for (const auto& t : local) host.push_back(t.to(at::kCPU));
    at::Tensor out_host = out.to(at::kCPU);
    reduce_over(comm_handle, k, r, host, count, out_host, host_scratch_);
    out.copy_(out_host);
    return;
  }
  MPI_Comm comm = as_comm(comm_handle);
  const std::int64_t n = out.numel();
  if (n > std::int64_t(1) << 30) throw MpiError("MpiCommunicator: buffers over 2^30 elements are not supported yet");
  if (power_of_two(k)) {
    tree_sum(local, 0, local_, out, scratch);  // this process's workers
    float* s = out.data_ptr<float>();
    if (!exchange_.defined() || exchange_.numel() < n / 2 + 1 || exchange_.device() != out.device()) {
      exchange_ = at::empty({n / 2 + 1}, out.options());
    }
    std::int64_t lo = 0, hi = n;
    for (int d = 1; d < k; d <<= 1) {  // recursive halving: partners at distance 1, 2, 4, ...
      const int partner = r ^ d;
      const std::int64_t mid = lo + (hi - lo) / 2;
      const bool lower = (r & d) == 0;
      const std::int64_t keep_lo = lower ? lo : mid, keep_hi = lower ? mid : hi;
      const std::int64_t send_lo = lower ? mid : lo, send_hi = lower ? hi : mid;
      device_sync(out);
      check(MPI_Sendrecv(s + send_lo, int(send_hi - send_lo), MPI_FLOAT, partner, 17, exchange_.data_ptr<float>(),
                         int(keep_hi - keep_lo), MPI_FLOAT, partner, 17, comm, MPI_STATUS_IGNORE),
            "MPI_Sendrecv");
      // lower + upper: the tree's order (float addition is commutative, so either side may add).
      out.narrow(0, keep_lo, keep_hi - keep_lo).add_(exchange_.narrow(0, 0, keep_hi - keep_lo));
      lo = keep_lo;
      hi = keep_hi;
    }
    std::vector<int> counts(static_cast<std::size_t>(k)), displs(static_cast<std::size_t>(k));
    for (int q = 0; q < k; ++q) {
      const auto [a, b] = segment(q, k, n);
      displs[std::size_t(q)] = int(a);
      counts[std::size_t(q)] = int(b - a);
    }
    device_sync(out);
    check(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, s, counts.data(), displs.data(), MPI_FLOAT, comm),
          "MPI_Allgatherv");
  } else {
    // Not a power of two: every worker's buffer to rank 0, the same tree there, then to all.
    at::Tensor mine = at::empty({std::int64_t(local_), n}, out.options());
    for (int i = 0; i < local_; ++i) mine[i].copy_(local[std::size_t(i)]);
    at::Tensor all = r == 0 ? at::empty({std::int64_t(local_) * k, n}, out.options()) : at::Tensor();
    device_sync(mine);
    check(MPI_Gather(mine.data_ptr<float>(), int(local_ * n), MPI_FLOAT, r == 0 ? all.data_ptr<float>() : nullptr,
                     int(local_ * n), MPI_FLOAT, 0, comm),
          "MPI_Gather");
    if (r == 0) {
      std::vector<at::Tensor> rows;
      for (std::int64_t i = 0; i < all.size(0); ++i) rows.push_back(all[i]);
      tree_sum(rows, 0, int(rows.size()), out, scratch);
      device_sync(out);
    }
    check(MPI_Bcast(out.data_ptr<float>(), int(n), MPI_FLOAT, 0, comm), "MPI_Bcast");
  }
  divide_by_count(out, count);
}

}  // namespace dpstudy
