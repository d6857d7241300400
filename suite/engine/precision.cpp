// Precision: the device checks, the TF32 switches, and autocast per thread.
#include "dpstudy/precision.hpp"

#include <ATen/Context.h>
#include <ATen/autocast_mode.h>
#include <torch/version.h>

#include <fstream>
#include <sstream>
#include <string>

#include "dpstudy/error.hpp"

// LibTorch 2.4 takes the device type in its autocast calls and deprecates the
// older per-device functions; 1.13 has only those.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define DPSTUDY_AUTOCAST_BY_DEVICE_TYPE 1
#else
#define DPSTUDY_AUTOCAST_BY_DEVICE_TYPE 0
#endif

namespace dpstudy {
namespace {

bool autocast_enabled(c10::DeviceType type) {
#if DPSTUDY_AUTOCAST_BY_DEVICE_TYPE
  return at::autocast::is_autocast_enabled(type);
#else
  return type == c10::DeviceType::CUDA ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
#endif
}

c10::ScalarType autocast_dtype(c10::DeviceType type) {
#if DPSTUDY_AUTOCAST_BY_DEVICE_TYPE
  return at::autocast::get_autocast_dtype(type);
#else
  return type == c10::DeviceType::CUDA ? at::autocast::get_autocast_gpu_dtype()
                                       : at::autocast::get_autocast_cpu_dtype();
#endif
}

void set_autocast(c10::DeviceType type, bool enabled, c10::ScalarType dtype) {
#if DPSTUDY_AUTOCAST_BY_DEVICE_TYPE
  at::autocast::set_autocast_dtype(type, dtype);
  at::autocast::set_autocast_enabled(type, enabled);
#else
  if (type == c10::DeviceType::CUDA) {
    at::autocast::set_autocast_gpu_dtype(dtype);
    at::autocast::set_enabled(enabled);
  } else {
    at::autocast::set_autocast_cpu_dtype(dtype);
    at::autocast::set_cpu_enabled(enabled);
  }
#endif
}

bool read_cpu_has_bf16() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("flags", 0) != 0 && line.rfind("Features", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') == std::string::npos ? 0 : line.find(':') + 1));
    for (std::string w; words >> w;) {
      if (w == "avx512_bf16" || w == "amx_bf16" || w == "bf16") return true;
    }
    return false;  // the first CPU's flags stand for all
  }
  return false;
}

}  // namespace

bool cpu_has_bf16() {
  static const bool has = read_cpu_has_bf16();  // once: a study checks every planned run
  return has;
}

void check_precision(Precision precision, const c10::Device& device) {
  if (precision == Precision::tf32 && !device.is_cuda()) {
    throw ConfigError("precision", "tf32",
                      "is a mode of NVIDIA GPUs' matrix units, and this run is on the " + device.str() +
                          ": give fp32 or bf16, or --device cuda");
  }
  if (precision == Precision::bf16 && device.is_cpu() && !cpu_has_bf16()) {
    throw ConfigError("precision", "bf16",
                      "needs a CPU with bfloat16 instructions (avx512_bf16 or amx_bf16 in /proc/cpuinfo), and this "
                      "CPU has none: give fp32, or run on a GPU");
  }
}

void apply_precision(Precision precision, const c10::Device& device) {
  if (!device.is_cuda()) return;
  at::globalContext().setAllowTF32CuBLAS(precision == Precision::tf32);
  at::globalContext().setAllowTF32CuDNN(precision == Precision::tf32);
}

PrecisionScope::PrecisionScope(Precision precision, const c10::Device& device)
    : active_(precision == Precision::bf16), device_type_(device.type()) {
  if (!active_) return;
  was_enabled_ = autocast_enabled(device_type_);
  was_dtype_ = autocast_dtype(device_type_);
  set_autocast(device_type_, true, c10::ScalarType::BFloat16);
  at::autocast::increment_nesting();
}

PrecisionScope::~PrecisionScope() {
  if (!active_) return;
  // As PyTorch's autocast context does on leaving its outermost level: the
  // weights cast for this pass are not kept for the next, whose weights differ.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  set_autocast(device_type_, was_enabled_, was_dtype_);
}

}  // namespace dpstudy
