// A run's precision on its device (docs/engine.md, "Precision"). fp32: float32
// throughout, TF32 off on a GPU. tf32: a GPU's matrix units may round the inputs
// of products and convolutions to TF32. bf16: the forward pass under autocast,
// matrix products and convolutions in bfloat16, while the weights, their
// gradients, the optimiser and the averaging stay float32.
#pragma once

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include "dpstudy/run_config.hpp"

namespace dpstudy {

// Whether this CPU has bfloat16 instructions: avx512_bf16 or amx_bf16 on x86,
// bf16 on Arm, as /proc/cpuinfo lists them.
bool cpu_has_bf16();
// ConfigError when `device` cannot run `precision`: tf32 off a GPU, bf16 on a
// CPU without bfloat16 instructions (emulated, it would be slow and another
// arithmetic than on a CPU that has them).
void check_precision(Precision precision, const c10::Device& device);
// The process's TF32 switches for cuBLAS and cuDNN: on for tf32, off for the
// others (LibTorch's default leaves cuDNN's convolutions in TF32). Nothing on
// the CPU. NVIDIA_TF32_OVERRIDE=0 in the environment still turns TF32 off.
void apply_precision(Precision precision, const c10::Device& device);

// This thread's autocast for bf16 while the object lives; nothing otherwise.
// Autocast is per thread: workers side by side each make their own.
class PrecisionScope {
 public:
  PrecisionScope(Precision precision, const c10::Device& device);
  ~PrecisionScope();
  PrecisionScope(const PrecisionScope&) = delete;
  PrecisionScope& operator=(const PrecisionScope&) = delete;

 private:
  bool active_;
  c10::DeviceType device_type_;
  bool was_enabled_ = false;
  c10::ScalarType was_dtype_ = c10::ScalarType::Float;
};

}  // namespace dpstudy
