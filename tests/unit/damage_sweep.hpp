// The damage sweep of the unit tests: a result file (a run file, an index, a
// checkpoint) damaged one flipped bit at a time and read back whole through
// dpstudy's HDF5 layer. Every damaged copy must be refused (an Hdf5Error) or
// read exactly as the intact file: none may be read as other values, crash or
// hang. Environment: DPSTUDY_DAMAGE_STRIDE=N damages every Nth byte instead of
// the test's own stride (1: every byte, docs/building.md), DPSTUDY_DAMAGE_BIT=B
// flips bit B of each (default: bit byte % 8), DPSTUDY_DAMAGE_KEEP=FILE keeps
// a copy of the intact file.
#pragma once

#include <cstddef>
#include <string>

namespace dpstudy::test {

// Everything the file holds as dpstudy's readers see it, as text; throws
// Hdf5Error where the file cannot be read.
std::string dump(const std::string& path);

// Damages `path` one bit at a time, every `default_stride`th byte, and reads
// each copy with dump(); a copy read as other values, or any other exception
// than Hdf5Error, fails the test. A crash or a hang (20 s) names the byte.
void sweep(const std::string& path, const std::string& what, std::size_t default_stride);

}  // namespace dpstudy::test
