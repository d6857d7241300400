// The data and utility headers of dpstudy::core, without LibTorch: datasets
// and their readers, files, checksums, fixtures, build and runtime facts.
// A workload needs dpstudy/workload.hpp (its main.cpp) and dpstudy/model.hpp
// (its model.cpp) instead: docs/workloads.md.
#pragma once

#include "dpstudy/build_info.hpp"
#include "dpstudy/cifar10.hpp"
#include "dpstudy/config.hpp"
#include "dpstudy/dataset.hpp"
#include "dpstudy/error.hpp"
#include "dpstudy/file_io.hpp"
#include "dpstudy/fixtures.hpp"
#include "dpstudy/idx.hpp"
#include "dpstudy/manifest.hpp"
#include "dpstudy/runtime_info.hpp"
#include "dpstudy/sha256.hpp"
