// A workload's front end (workload.hpp): the command line and the study read
// and planned as the engine will read and plan them, without LibTorch, so that
// help, the version and a refusal come in milliseconds; then the engine in its
// place, with the same arguments and process (mpirun and Slurm keep tracking it).
#include <unistd.h>

#include <boost/program_options/errors.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "dpstudy/error.hpp"
#include "dpstudy/file_io.hpp"
#include "dpstudy/runtime_info.hpp"
#include "dpstudy/workload.hpp"
#include "job.hpp"

#ifndef DPSTUDY_ENGINE_DIR_FROM_BIN
#define DPSTUDY_ENGINE_DIR_FROM_BIN "../libexec/dpstudy"
#endif

namespace dpstudy {
namespace {

std::string own_folder(const char* argv0) {
  const std::string exe = executable_path();
  const std::string path = !exe.empty() ? exe : std::string(argv0 ? argv0 : "");
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// Returns only when no engine could be executed.
int run_engine(const std::string& prog, char** argv) {
  std::fflush(nullptr);
  const std::string folder = own_folder(argv[0]);
  const std::string name = prog + "-engine";
  std::string tried;
  // Beside the front end in a build tree, in libexec once installed.
  for (const std::string& path : {folder + "/" + name, folder + "/" DPSTUDY_ENGINE_DIR_FROM_BIN "/" + name}) {
    ::execv(path.c_str(), argv);
    tried += (tried.empty() ? "" : ", ") + path + " (" + std::strerror(errno) + ")";
  }
  std::fprintf(stderr,
               "%s: error: cannot start its engine, which trains with LibTorch: tried %s. The two are built and "
               "installed together (workload.hpp): rebuild or reinstall dpstudy\n",
               prog.c_str(), tried.c_str());
  return 1;
}

int refuse(const std::string& prog, const std::string& what, int code, bool usage) {
  std::fprintf(stderr, "%s: error: %s%s\n", prog.c_str(), what.c_str(),
               usage ? ("\n(see " + prog + " --help)").c_str() : "");
  return code;
}

}  // namespace

int workload_main(int argc, char** argv, const Workload& workload) {
  const std::string prog = "dpstudy-" + workload.name;
  // A process of several under mpirun or srun leaves everything to the engine: it
  // reports an error once, for the whole job, and ends every process.
  if (launched_by_mpi()) return run_engine(prog, argv);
  try {
    const std::optional<Request> request = read_request(argc, argv, workload);
    if (!request) return stdout_exit_status(prog, 0);  // --help, --version
    if (!request->options.rebuild_index) (void)plan_runs(*request, workload);
  } catch (const boost::program_options::error& e) {
    return refuse(prog, e.what(), 2, true);
  } catch (const UsageError& e) {
    return refuse(prog, e.what(), 2, true);
  } catch (const std::exception& e) {
    return refuse(prog, e.what(), 1, false);
  }
  return run_engine(prog, argv);
}

}  // namespace dpstudy
