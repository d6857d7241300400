// Umbrella header for users of libdpstudy.
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
