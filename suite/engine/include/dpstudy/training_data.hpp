// The data a study's runs share, made ready once, and one run's split of it
// into validation positions, training positions and the workers' shards.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "dpstudy/assignment.hpp"
#include "dpstudy/dataset.hpp"
#include "dpstudy/run_config.hpp"

namespace dpstudy {

// A train/test pair made ready once and shared by every run of a study: images
// normalised to float, in the layout the models take.
struct TrainingData {
  const DatasetSpec* spec = nullptr;
  at::Tensor train_x, train_y, test_x, test_y;  // float [N, C, H, W], int64 [N], on the run's device
  std::vector<FileRecord> files;
  std::string checksums() const;  // checksum_lines() of its files (train, then test)
};
// Normalises and places the data on `device` (CPU, or the process's GPU).
TrainingData prepare_data(const Dataset& train, const Dataset& test, const at::Device& device = at::kCPU);
// What a dry run reads of the data: the labels, on the CPU, and the files.
// No images: train_x and test_x stay undefined (a dry run trains nothing).
TrainingData prepare_labels(const Dataset& train, const Dataset& test);
// A split's bytes as a uint8 [N, C, H, W] tensor that shares them (valid while `d` lives).
at::Tensor image_tensor(const Dataset& d);
// Its labels as an int64 [N] tensor of their own.
at::Tensor label_tensor(const Dataset& d);
// Per-channel normalisation of a uint8 [N, C, H, W] tensor (see DatasetSpec).
at::Tensor normalize_images(const at::Tensor& images_u8, const DatasetSpec& spec);

// The training positions of a run (its validation split held out: a seeded
// fraction, the rest in stored order), those held out, and the shards of
// dataset indices over the first (docs/engine.md, Data assignment). Throws
// ConfigError when W b exceeds the training samples or the assignment cannot
// be made (a study checks every run so before it starts).
struct DataSplit {
  std::vector<std::int64_t> train, val;
  std::vector<std::vector<std::int64_t>> shards;
  AssignmentStats stats;
};
DataSplit split_data(const RunConfig& config, const at::Tensor& train_y);

}  // namespace dpstudy
