// What the engine's unit tests share: tiny models, fixture data made once for
// the whole test program, a base config, and comparisons of runs bit for bit.
#pragma once

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "dpstudy/dataset.hpp"
#include "dpstudy/fixtures.hpp"
#include "dpstudy/trainer.hpp"
#include "test_support.hpp"

namespace dpstudy::test {

struct TinyMlp : Model {
  TinyMlp()
      : fc1(register_module("fc1", torch::nn::Linear(784, 32))),
        fc2(register_module("fc2", torch::nn::Linear(32, 10))) {}
  at::Tensor forward(const at::Tensor& x) override { return fc2(torch::relu(fc1(x.flatten(1)))); }
  torch::nn::Linear fc1, fc2;
};

inline ModelFactory tiny() {
  return [] { return std::make_shared<TinyMlp>(); };
}

// Small fixture data, made once for the whole test program.
inline const TrainingData& data() {
  static ScratchDir dir;
  static const TrainingData d = [] {
    write_fixtures(dir.str(), {480, 100, 11, false});
    return prepare_data(load_dataset("mnist", Split::train, {dir.str()}),
                        load_dataset("mnist", Split::test, {dir.str()}));
  }();
  return d;
}

inline RunConfig base_config() {
  RunConfig c;
  c.dataset = "mnist";
  c.workers = 1;
  c.batch_size = 16;
  c.lr = 0.05;
  c.optimizer = OptimizerKind::momentum;
  c.momentum = 0.9;
  c.weight_decay = 1e-3;
  c.epochs = 1;
  c.seed = 7;
  return c;
}

struct TinyBn : Model {
  TinyBn()
      : fc(register_module("fc", torch::nn::Linear(784, 16))),
        bn(register_module("bn", torch::nn::BatchNorm1d(16))),
        out(register_module("out", torch::nn::Linear(16, 10))) {}
  at::Tensor forward(const at::Tensor& x) override { return out(torch::relu(bn(fc(x.flatten(1))))); }
  torch::nn::Linear fc;
  torch::nn::BatchNorm1d bn;
  torch::nn::Linear out;
};

// Convolutions and batch norm: LibTorch runs them through oneDNN, which sizes
// its work by the thread count (the side-by-side workers must not hang in it).
struct TinyCnn : Model {
  TinyCnn()
      : conv(register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 8, 3).stride(2).padding(1)))),
        bn(register_module("bn", torch::nn::BatchNorm2d(8))),
        out(register_module("out", torch::nn::Linear(8 * 14 * 14, 10))) {}
  at::Tensor forward(const at::Tensor& x) override { return out(torch::relu(bn(conv(x))).flatten(1)); }
  torch::nn::Conv2d conv;
  torch::nn::BatchNorm2d bn;
  torch::nn::Linear out;
};

// A series as its bit patterns (NaN, where nothing was evaluated, equals itself).
// One buffer per worker for the communicators' tests, the same in every process
// (the seed alone makes them), with magnitudes apart, so that the order of the
// additions shows in the bits.
inline std::vector<at::Tensor> worker_buffers(int workers, std::int64_t n = 1001) {
  at::manual_seed(3);
  std::vector<at::Tensor> v;
  for (int i = 0; i < workers; ++i) v.push_back(at::randn({n}) * std::pow(10.0, i % 4));
  return v;
}

inline std::vector<std::uint64_t> bits(const std::vector<double>& v) {
  std::vector<std::uint64_t> out(v.size());
  if (!v.empty()) std::memcpy(out.data(), v.data(), v.size() * sizeof(double));  // data() may be null
  return out;
}

// Every metric of a run that must not depend on how it was computed in parallel.
inline void expect_same_bits(const RunResult& a, const RunResult& b, const std::string& what) {
  EXPECT_EQ(bits(a.train.loss), bits(b.train.loss)) << what;
  EXPECT_EQ(bits(a.train.worker_loss), bits(b.train.worker_loss)) << what;
  EXPECT_EQ(bits(a.eval.test_loss), bits(b.eval.test_loss)) << what;
  EXPECT_EQ(bits(a.eval.test_accuracy), bits(b.eval.test_accuracy)) << what;
  EXPECT_EQ(bits(a.eval.val_loss), bits(b.eval.val_loss)) << what;
  EXPECT_EQ(bits(a.eval.worker_divergence), bits(b.eval.worker_divergence)) << what;
  EXPECT_EQ(bits(a.syncs.divergence), bits(b.syncs.divergence)) << what;
  EXPECT_EQ(a.sparsity.overall, b.sparsity.overall) << what;
}

// The tiny MLP's run of `c`, checkpointed every `every` steps, then resumed
// from its last checkpoint, which the test expects at step `from`.
inline RunResult resumed_run(const RunConfig& c, Communicator& comm, std::int64_t every, std::int64_t from) {
  ScratchDir dir;
  const std::string path = dir.str() + "/run.ckpt.h5";
  {
    Trainer t(c, tiny(), data(), comm);
    t.run(nullptr, {path, 0, every});
  }
  Trainer resumed(c, tiny(), data(), comm);
  resumed.restore_checkpoint(path);
  EXPECT_EQ(resumed.current_step(), from);
  return resumed.run();
}

// Restores LibTorch's thread count when a test ends.
struct ThreadsGuard {
  int saved = at::get_num_threads();
  ~ThreadsGuard() { at::set_num_threads(saved); }
};

// A second convolution with 4 input channels: with 1, channels_last lies as contiguous does.
struct TwoConvs : Model {
  TwoConvs()
      : first(register_module("first", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 4, 3).stride(2)))),
        second(register_module("second", torch::nn::Conv2d(torch::nn::Conv2dOptions(4, 4, 3).stride(2)))),
        out(register_module("out", torch::nn::Linear(4 * 6 * 6, 10))) {}
  at::Tensor forward(const at::Tensor& x) override {
    return out(torch::relu(second(torch::relu(first(x)))).flatten(1));
  }
  torch::nn::Conv2d first, second;
  torch::nn::Linear out;
};

}  // namespace dpstudy::test
