// A Kineto trace: what LibTorch runs on this thread, and on a GPU its kernels
// and copies, written as a Chrome trace (JSON) for chrome://tracing, Perfetto
// or tools/trace-summary (throughput mode's --profile, docs/performance.md).
// LibTorch is built with Kineto in PyTorch's wheels, not in Debian's package.
#pragma once

#include <memory>
#include <string>

namespace dpstudy {

class KinetoTrace {
 public:
  // Starts recording the host's operations, and where `cuda`, the GPU's work.
  explicit KinetoTrace(bool cuda);
  ~KinetoTrace();  // stops recording if save() did not
  KinetoTrace(const KinetoTrace&) = delete;
  KinetoTrace& operator=(const KinetoTrace&) = delete;

  // Stops recording and writes the trace to `path`; an Error names the path.
  void save(const std::string& path);

  // Why this LibTorch cannot write a trace (it was built without Kineto);
  // empty when it can. Records and writes a trace of nothing, once, to find out.
  static const std::string& unavailable();

 private:
  bool recording_ = false;
};

}  // namespace dpstudy
