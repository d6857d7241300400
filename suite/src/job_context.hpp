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

#include "dpstudy/communicator.hpp"
#include "dpstudy/config.hpp"
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
  void barrier() const {}
  void broadcast(std::vector<std::int64_t>&) const {}
  double max(double value) const { return value; }
  std::vector<std::string> all_gather(const std::string& text) const { return {text}; }
};
#endif

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
  Execution execution;
  std::string prog, workload;
  int argc;
  char** argv;  // the command line, for provenance
  std::string& current_run;  // the run an error is reported against ("-": none)
};

// The job's first lines: version, BLAS, threads.
void print_header(const std::string& prog, const std::string& parallel);

// A study under <output>/<name>/ (or its dry run); the exit status.
int run_study(Job& job);

// --mode throughput: one Google Benchmark benchmark per distinct sweep point;
// the exit status.
int run_throughput_mode(const Job& job);

}  // namespace dpstudy
