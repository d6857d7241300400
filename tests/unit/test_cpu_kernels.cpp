// oneDNN as LibTorch loads it (this executable links LibTorch): its version and
// the instruction set it dispatches to, which decide a convolution's bits on the
// CPU (provenance's cpu_kernels). Each test case runs as a process of its own
// (gtest_discover_tests), and oneDNN reads its cap once, at its first question.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <regex>
#include <string>

#include "dpstudy/runtime_info.hpp"

using namespace dpstudy;

TEST(CpuKernels, OneDnnTellsItsVersionAndInstructionSet) {
  const std::string kernels = onednn_cpu_kernels();
  if (kernels.empty()) GTEST_SKIP() << "this LibTorch's oneDNN does not tell (linked in with hidden symbols)";
  EXPECT_TRUE(std::regex_match(kernels, std::regex(R"(\d+\.\d+\.\d+ (sse41|avx|avx2|avx512_\w+|isa 0x[0-9a-f]+))")))
      << kernels;
}

TEST(CpuKernels, OneDnnsInstructionSetIsCappedByTheEnvironment) {
  setenv("ONEDNN_MAX_CPU_ISA", "SSE41", 1);
  setenv("DNNL_MAX_CPU_ISA", "SSE41", 1);  // the name before oneDNN 2.5
  const std::string kernels = onednn_cpu_kernels();
  if (kernels.empty()) GTEST_SKIP() << "this LibTorch's oneDNN does not tell (linked in with hidden symbols)";
  EXPECT_EQ(kernels.substr(kernels.rfind(' ') + 1), "sse41") << kernels;
}
