// What the steps of a job that train share: the processes (an MPI session, or
// this one process), the data, the device and the threads. Unlike job.hpp it
// includes LibTorch's headers (trainer.hpp).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <c10/util/Exception.h>
#include <boost/program_options/errors.hpp>

#include "dpstudy/communicator.hpp"
#include "dpstudy/config.hpp"
#include "dpstudy/error.hpp"
#include "dpstudy/trainer.hpp"
#include "job.hpp"
#if DPSTUDY_WITH_MPI
#include "dpstudy/mpi.hpp"
#endif

namespace dpstudy {

#if DPSTUDY_WITH_MPI
using Session = mpi::Session;
#else
// Without MPI: one process.
struct Session {
  bool active() const { return false; }
  int rank() const { return 0; }
  int size() const { return 1; }
  int local_size() const { return 1; }
  int local_rank() const { return 0; }
  std::string host() const { return ""; }
  [[noreturn]] void abort(const std::string& message, int code) const {
    std::fprintf(stderr, "%s\n", message.c_str());
    std::exit(code);
  }
  void broadcast(std::vector<std::int64_t>&) const {}
  double max(double value) const { return value; }
  std::vector<std::string> all_gather(const std::string& text) const { return {text}; }
};
#endif

// How a step of the job ended on one process: going on, done (--help), or an
// error, with the exit status every process of the job then ends with. Thrown
// by lead_step; not an std::exception: nothing but workload_main catches it.
struct JobEnded {
  static constexpr int go_on = -1;
  int code = go_on;  // else the exit status: 0 done, 2 bad usage, 1 another error
  std::string what;  // the error
  bool usage = false;  // bad usage: the message points to --help

  // As text and back, to tell the other processes.
  std::string text() const { return std::to_string(code) + (usage ? "u" : "-") + '\n' + what; }
  static JobEnded from_text(const std::string& t) {
    const auto eol = t.find('\n');
    return {std::atoi(t.c_str()), t.substr(eol + 1), t[eol - 1] == 'u'};
  }
};

// LibTorch's message without its C++ backtrace, which says nothing to a user;
// with it where TORCH_SHOW_CPP_STACKTRACES=1, as in PyTorch: which operation
// failed, inside a step captured as a CUDA graph, say.
inline std::string torch_message(const c10::Error& e) {
  const char* show = std::getenv("TORCH_SHOW_CPP_STACKTRACES");
  return show && std::string(show) == "1" ? std::string(e.what()) : e.what_without_backtrace();
}

// Runs `step`, turning its error into how the step ended.
template <typename Step>
JobEnded ending_of(Step&& step) {
  try {
    step();
  } catch (const boost::program_options::error& e) {
    return {2, e.what(), true};
  } catch (const UsageError& e) {
    return {2, e.what(), true};
  } catch (const c10::Error& e) {
    return {1, torch_message(e), false};
  } catch (const std::exception& e) {
    return {1, e.what(), false};
  }
  return {};
}

// Runs `step` on world rank 0 alone (checking the results folder, say) while
// the others wait, then tells them how it ended: an error there throws
// JobEnded on every process, so that rank 0 prints it once and every process
// exits with its status, without MPI_Abort. A collective: every process calls it.
template <typename Step>
void lead_step(const Session& session, Step&& step) {
  const JobEnded mine = session.rank() == 0 ? ending_of(step) : JobEnded{};
  const JobEnded told = JobEnded::from_text(session.all_gather(mine.text()).front());
  if (told.code != JobEnded::go_on) throw told;
}

// The communicator for one run placed on `ranks` (world ranks): in process for
// one rank, else the ranks' own MPI communicator.
struct RunComm {
  std::unique_ptr<Communicator> comm;
#if DPSTUDY_WITH_MPI
  std::unique_ptr<mpi::RunGroup> group;
#endif
  RunComm(const std::vector<int>& ranks, int workers, int tag);
};

struct Job {
  const Session& session;
  const Request& request;
  Plan& plan;
  std::map<std::string, TrainingData>& data;  // by dataset name; absent in a dry run without the files
  std::vector<std::string> data_notes;        // "# ..." lines: datasets not here (costs assumed), files verified
  at::Device device;
  std::string gpu;         // this process's GPU as provenance names it (gpu_identity); "none" on the CPU
  std::string gpu_driver;  // the CUDA version its driver supports; "none" on the CPU
  std::string cpu_kernels;  // LibTorch's own CPU kernels in this process ("ATen AVX2, oneDNN 2.6.3 avx2")
  Execution execution;
  std::string prog, workload;
  int argc;
  char** argv;  // the command line, for provenance
  std::string& current_run;  // the run an error is reported against ("-": none)
  // Runs this process trains at once, each in a thread (--runs_at_once); 0:
  // auto on a GPU, sized from a first run's peak memory (StudyJob::train_lanes).
  int runs_at_once = 1;
};

// The job's first lines: version, BLAS, threads, the GPU.
void print_header(const Job& job);

// Where the job's processes compute: each one's host, BLAS build, GPU, GPU
// driver and LibTorch's CPU kernels, by world rank. A run on processes of two BLAS
// builds, two kinds of GPU or two sets of CPU kernels does not give the bits of
// one process.
struct Places {
  std::vector<std::string> hosts, blas_builds, gpus, gpu_drivers, cpu_kernels;
  std::string note;  // "# warning: ..." lines when the processes' BLAS builds, GPUs or CPU kernels differ; "" if not

  // The distinct values at `ranks`, in rank order: hosts joined by ",", the others by " | ".
  std::string hosts_of(const std::vector<int>& ranks) const;
  std::string blas_build_of(const std::vector<int>& ranks) const;
  std::string gpu_of(const std::vector<int>& ranks) const;
  std::string gpu_driver_of(const std::vector<int>& ranks) const;
  std::string cpu_kernels_of(const std::vector<int>& ranks) const;
};
// A collective: every process calls it.
Places gather_places(const Job& job);

// What a result file records of the code and the stack that computed it on the
// processes `ranks` (results/README.md): versions, the BLAS build and GPU, hosts,
// the device, the command line. Callers add what is theirs (a run's threads and
// data files).
KeyValues provenance(const Job& job, const Places& places, const std::vector<int>& ranks);

// A study under <output>/<name>/ (or its dry run); the exit status.
int run_study(Job& job);

// --mode throughput: one Google Benchmark benchmark per distinct sweep point;
// the exit status.
int run_throughput_mode(const Job& job);

}  // namespace dpstudy
