// Facts about the running process that affect speed or results: which BLAS
// library LibTorch calls, library versions. Printed at start and recorded in
// provenance.
#pragma once

#include <string>
#include <vector>

namespace dpstudy {

struct BlasInfo {
  std::string library;  // path of the mapped BLAS library, or a description
  std::string kind;     // "OpenBLAS (openmp)", "reference BLAS", "MKL", ...
  // The library's own words on its version and build, where it has them: OpenBLAS's
  // "OpenBLAS 0.3.21 ... Cooperlake MAX_THREADS=64" names the kernels this CPU got,
  // which decide a product's bits as much as the version does. "-" where unknown.
  std::string build = "-";
  bool slow = false;    // true for the reference BLAS (about 15x slower training)
};

// Looks at the libraries mapped into this process (/proc/self/maps).
BlasInfo blas_info();
std::string torch_version();
// The CUDA device `ordinal` as the NVIDIA driver describes it, through its C API
// loaded at run time (no CUDA headers or libraries at build time). `library` is
// for tests.
struct CudaDriverInfo {
  // "NVIDIA H200, compute 9.0": two GPUs of other models run other kernels, whose
  // bits differ as two BLAS builds' do. "device N, not described: <why>" where the
  // driver cannot tell.
  std::string device;
  // The CUDA version the driver supports, "13.0" ("unknown" where it cannot tell):
  // recorded, not compared, since the kernels come with LibTorch's CUDA libraries.
  std::string driver = "unknown";
};
CudaDriverInfo cuda_driver_info(int ordinal, const char* library = "libcuda.so.1");
// "13.0" from the CUDA APIs' 13000 (major * 1000 + minor * 10), the driver's and the runtime's.
std::string cuda_version_text(long version);
// "9.19.0" from cuDNN's 91900, "8.9.7" from 8907 (CUDNN_VERSION before cuDNN 9).
std::string cudnn_version_text(long version);
// The versions of the CUDA libraries loaded in this process, each asked of the
// library itself through the symbol it exports ("" where none is loaded, or it
// is linked in statically). A GPU run's kernels come from these libraries, and a
// PyTorch wheel loads them from packages of their own (nvidia-cublas-*,
// nvidia-cudnn-*), which can be updated apart from it: the versions LibTorch was
// built with need not be the ones that computed.
struct CudaLibraryVersions {
  std::string runtime;  // "13.0" (cudaRuntimeGetVersion)
  std::string cublas;   // "13.1.0" (cublasGetProperty)
  std::string cudnn;    // "9.19.0" (cudnnGetVersion)
};
CudaLibraryVersions cuda_library_versions();
// The environment variables set in this process that change a GPU run's
// arithmetic without LibTorch's API telling it, "NAME=value, ..." ("" where none
// is): TF32 in cuBLAS and cuDNN (NVIDIA_TF32_OVERRIDE; NVIDIA's PyTorch containers
// set TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1), cuBLAS's workspace, cuBLASLt, cuDNN's
// API. `deterministic`: dpstudy's deterministic mode, which sets
// CUBLAS_WORKSPACE_CONFIG to :4096:8 where it is not set, so that value is no
// setting of the user's there.
std::string gpu_arithmetic_environment(bool deterministic);
// oneDNN (LibTorch's convolutions on the CPU) as the library loaded in this process
// tells it: its version and the instruction set it dispatches to, picked by CPU
// kind or capped with ONEDNN_MAX_CPU_ISA ("2.6.3 avx512_core"); a convolution's
// bits depend on both. "" where no oneDNN exports them (linked into LibTorch
// with hidden symbols, as in PyTorch's wheels, or absent).
std::string onednn_cpu_kernels();
// A dnnl_cpu_isa_t value in oneDNN's words ("avx2"), "isa 0x..." for a value that
// means other sets in other versions.
std::string onednn_instruction_set(int isa);
// "LibTorch 2.6.0, OpenBLAS 0.3.29 ... Cooperlake ...": what decides a run's bits besides
// dpstudy and the config, in the words of run files' provenance (libtorch, blas_build),
// but for LibTorch's own CPU kernels (cpu_kernels) and the GPU, which a job looks up.
std::string software_stack();
// The running executable's path, from /proc/self/exe ("" where that is unreadable).
std::string executable_path();
// <prefix>/share/dpstudy for the running executable (<prefix>/bin/..., or a
// workload's engine in <prefix>/libexec/dpstudy/), found from /proc/self/exe so that an installed tree can be moved; "" if not there.
std::string installed_share_dir();
std::string mpi_library_version();  // "none" when built without MPI
// True when this process was started by mpirun / mpiexec / srun (their
// environment variables are set; also in a build without MPI). Then a Session
// initialises MPI, and stdout may be a launcher's pseudo-terminal, not the user's.
bool launched_by_mpi();
// This machine's name (gethostname), "unknown" if it has none.
std::string host_name();
// The CPUs this process may run on (its affinity mask: mpirun's binding, a
// cpuset, taskset; the online CPUs if that cannot be read), and the node's
// online CPUs (/sys/devices/system/cpu/online), by number.
std::vector<int> usable_cpu_list();
std::vector<int> online_cpu_list();
// The physical cores those CPUs belong to: their distinct (package, core)
// pairs in <sysfs>/cpuN/topology, so that two hardware threads of one core
// (SMT) count once; cpus.size() where the topology cannot be read.
int physical_cores(const std::vector<int>& cpus, const std::string& sysfs = "/sys/devices/system/cpu");

// The largest resident set size of this process since it started or since the
// last reset_peak_memory() (VmHWM in /proc/self/status), MiB; NaN where it
// cannot be read. Host memory only: a GPU's is not in it.
double peak_memory_mib();
// Hands freed heap back to the system (malloc_trim) and restarts the peak at
// the present resident size (/proc/self/clear_refs), so that a run's peak
// leaves out what an earlier run of the process held and no longer uses.
// False where the kernel refuses (then the peak is the process's so far).
bool reset_peak_memory();

}  // namespace dpstudy
