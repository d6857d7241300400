#include "dpstudy/kineto_trace.hpp"

#include <torch/csrc/autograd/profiler_kineto.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <set>

#include "dpstudy/error.hpp"

namespace dpstudy {

namespace {

namespace impl = torch::profiler::impl;
namespace profiler = torch::autograd::profiler;

std::set<impl::ActivityType> activities(bool cuda) {
  std::set<impl::ActivityType> a{impl::ActivityType::CPU};
  if (cuda) a.insert(impl::ActivityType::CUDA);
  return a;
}

// Starts Kineto on this thread; LibTorch's c10::Error where it cannot.
void start(bool cuda) {
  const impl::ProfilerConfig config(impl::ProfilerState::KINETO);
  profiler::prepareProfiler(config, activities(cuda));
  profiler::enableProfiler(config, activities(cuda));
}

// LibTorch's message without the C++ backtrace it appends.
std::string first_line(const c10::Error& e) {
  const std::string m = e.what_without_backtrace();
  return m.substr(0, m.find('\n'));
}

}  // namespace

KinetoTrace::KinetoTrace(bool cuda) {
  try {
    start(cuda);
  } catch (const c10::Error& e) {
    throw Error("cannot start a Kineto trace: " + first_line(e));
  }
  recording_ = true;
}

KinetoTrace::~KinetoTrace() {
  if (!recording_) return;
  try {
    (void)profiler::disableProfiler();
  } catch (...) {  // nothing to save, nothing to report
  }
}

void KinetoTrace::save(const std::string& path) {
  recording_ = false;
  std::unique_ptr<profiler::ProfilerResult> result;
  try {
    result = profiler::disableProfiler();
    result->save(path);
  } catch (const c10::Error& e) {
    throw Error(path + ": cannot write the Kineto trace: " + first_line(e));
  }
  if (!std::filesystem::exists(path)) throw Error(path + ": the Kineto trace was not written");
}

const std::string& KinetoTrace::unavailable() {
  static const std::string why = [] {
    const std::string probe =
        (std::filesystem::temp_directory_path() / ("dpstudy-kineto-probe-" + std::to_string(getpid()) + ".json"))
            .string();
    std::string answer;
    try {
      start(false);
      profiler::disableProfiler()->save(probe);
    } catch (const c10::Error& e) {
      answer =
          "this LibTorch cannot write Kineto traces (" + first_line(e) + "); PyTorch's wheels and Spack's py-torch can";
    }
    std::remove(probe.c_str());
    return answer;
  }();
  return why;
}

}  // namespace dpstudy
