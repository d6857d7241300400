// A complete run file against this job: trained on the same data files, with
// the same software stack and the same build of dpstudy? StudyJob::look() asks
// for each complete run, so that a resumed study says what differs
// (docs/studies.md, "Output, resume and kills").
#include "dpstudy/build_info.hpp"
#include "dpstudy/hdf5.hpp"
#include "dpstudy/runtime_info.hpp"
#include "study_job.hpp"

namespace dpstudy {

std::string StudyJob::other_data(const PlannedRun& run, const std::string& file, const h5::File& f) const {
  const auto data = job_.data.find(run.config.dataset);  // none in a dry run without the files
  const h5::Group prov = f.root().open_group("provenance");
  if (data == job_.data.end() || !prov.has_attr("dataset_checksums")) return "";
  const std::string differ = checksum_differences(prov.get_string("dataset_checksums"), data->second.checksums());
  return differ.empty() ? "" : file + ": " + differ;
}

std::string StudyJob::other_stack(const h5::File& f, unsigned* differ) const {
  const h5::Group prov = f.root().open_group("provenance");
  const auto item = [&prov](const char* key) { return prov.has_attr(key) ? prov.get_string(key) : std::string("-"); };
  const std::string torch = item("libtorch"), blas = item("blas_build"), gpu = item("gpu"), cpu = item("cpu_kernels");
  static const std::string torch_here = torch_version(), blas_here = blas_info().build;
  const bool on_gpu = gpu != "-" && gpu != "none", here_on_gpu = job_.gpu != "none";
  // Files from before blas_build (gpu, cpu_kernels) was recorded are judged by what they record.
  unsigned parts = 0;
  if (torch != "-" && torch != torch_here) parts |= 1u << kOtherLibTorch;
  if (blas != "-" && blas_here != "-" && blas != blas_here) parts |= 1u << kOtherBlas;
  if (cpu != "-" && job_.cpu_kernels != "-" && cpu != job_.cpu_kernels) parts |= 1u << kOtherCpuKernels;
  if (gpu != "-" && gpu != job_.gpu) {
    // The model and compute capability come first ("NVIDIA H200, compute 9.0, CUDA ...").
    const auto model = [](const std::string& g) { return g.substr(0, g.find(", CUDA ")); };
    parts |= 1u << (!on_gpu                         ? kOnTheCpu
                    : !here_on_gpu                  ? kOnAGpu
                    : model(gpu) != model(job_.gpu) ? kOnAnotherGpu
                                                    : kOtherGpuStack);
  }
  if (parts == 0) return "";
  *differ |= parts;
  return "LibTorch " + torch + (blas == "-" ? "" : ", " + blas) + (cpu == "-" ? "" : ", " + cpu) +
         (on_gpu                         ? ", GPU " + gpu
          : here_on_gpu && gpu == "none" ? ", on the CPU"
                                         : "");
}

std::string StudyJob::other_build(const h5::File& f) const {
  const h5::Group prov = f.root().open_group("provenance");
  const auto item = [&prov](const char* key) { return prov.has_attr(key) ? prov.get_string(key) : std::string("-"); };
  static const BuildInfo here = build_info();
  // Compared only where both tell: "-" is a file from before git_changes, "unknown" a build outside git.
  const auto differ = [](const std::string& there, const std::string& mine) {
    return there != "-" && there != "unknown" && mine != "unknown" && there != mine;
  };
  BuildInfo there;
  there.version = item("dpstudy_version");
  there.git_commit = item("git_commit");
  there.git_changes = item("git_changes");
  if (!differ(there.version, here.version) && !differ(there.git_commit, here.git_commit) &&
      !differ(there.git_changes, here.git_changes)) {
    return "";
  }
  return build_line(there);
}

}  // namespace dpstudy
