// A real checkpoint through the damage sweep (damage_sweep.hpp): a run of two
// workers under local SGD, with evaluations, checkpointed by Trainer::run, then
// damaged one flipped bit at a time. Every copy must be refused (resuming then
// starts the run over) or read exactly as the intact file; so must another
// run's checkpoint and a file of another kind. The writer needs
// LibTorch, so this lives beside the engine's tests; the run file and the
// index are swept in test_hdf5_damage.cpp.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "damage_sweep.hpp"
#include "dpstudy/dataset.hpp"
#include "dpstudy/fixtures.hpp"
#include "dpstudy/hdf5.hpp"
#include "dpstudy/results.hpp"
#include "dpstudy/trainer.hpp"
#include "test_support.hpp"

using namespace dpstudy;
using namespace dpstudy::test;

namespace {

// Small on purpose (172 parameters, on 16 pixels): the sweep reads the whole
// file once per damaged byte.
struct NarrowMlp : Model {
  NarrowMlp() : fc1(register_module("fc1", torch::nn::Linear(16, 6))), fc2(register_module("fc2", torch::nn::Linear(6, 10))) {}
  at::Tensor forward(const at::Tensor& x) override { return fc2(torch::relu(fc1(x.flatten(1).narrow(1, 400, 16)))); }
  torch::nn::Linear fc1, fc2;
};

// 240 training and 50 test images, generated in `folder`.
TrainingData small_data(const std::string& folder) {
  write_fixtures(folder, {240, 50, 5, false});
  return prepare_data(load_dataset("mnist", Split::train, {folder}), load_dataset("mnist", Split::test, {folder}));
}

// Two workers, batch 8, one epoch: 15 steps.
RunConfig small_run() {
  RunConfig c;
  c.dataset = "mnist";
  c.workers = 2;
  c.batch_size = 8;
  c.lr = 0.05;
  c.epochs = 1;
  c.seed = 11;
  return c;
}

}  // namespace

TEST(CheckpointDamage, EveryFlippedBitOfACheckpointIsRefusedOrHarmless) {
  ScratchDir scratch;
  const TrainingData data = small_data(scratch.str());
  RunConfig c = small_run();
  c.optimizer = OptimizerKind::momentum;
  c.momentum = 0.9;
  c.sync_period = 4;  // the replicas differ between averagings: each worker's weights are its own
  c.eval_every = 3;
  const std::string path = scratch.str() + "/run.ckpt.h5";
  {
    InProcessCommunicator comm(2);
    Trainer t(c, [] { return std::make_shared<NarrowMlp>(); }, data, comm);
    ASSERT_EQ(t.total_steps(), 15);
    t.run(nullptr, {path, 0, 7});  // checkpoints at steps 7 and 14, neither an averaging step
  }
  // The intact checkpoint resumes; its state is what the sweep compares every copy with.
  {
    InProcessCommunicator comm(2);
    Trainer t(c, [] { return std::make_shared<NarrowMlp>(); }, data, comm);
    t.restore_checkpoint(path);
    ASSERT_EQ(t.current_step(), 14);
    ASSERT_FALSE(at::equal(t.replica(0).params(), t.replica(1).params()));
  }
  const std::string intact = dump(path);
  for (const char* part : {"/workers/0", "/workers/1", "/train", "/eval", " dataset generator"}) {
    EXPECT_NE(intact.find(part), std::string::npos) << part;
  }
  sweep(path, "checkpoint", 29);
}

// A checkpoint is resumed only by the run it belongs to: one of another
// configuration (a file copied between studies, or a run id computed alike by
// mistake) and a file of another kind are refused, naming the file and why, and
// the run then starts over.
TEST(CheckpointDamage, AnotherRunsCheckpointOrAnotherFileIsRefusedWithWhy) {
  ScratchDir scratch;
  const TrainingData data = small_data(scratch.str());
  const RunConfig c = small_run();
  const std::string path = scratch.str() + "/run.ckpt.h5";
  const auto model = [] { return std::make_shared<NarrowMlp>(); };
  {
    InProcessCommunicator comm(2);
    Trainer t(c, model, data, comm);
    t.run(nullptr, {path, 0, 7});
  }
  RunConfig other = c;
  other.seed = 12;
  InProcessCommunicator comm(2);
  Trainer t(other, model, data, comm);
  const auto refusal = [&t](const std::string& file) {
    try {
      t.restore_checkpoint(file);
    } catch (const DataError& e) {
      return std::string(e.what());
    }
    return std::string("restored");
  };
  EXPECT_EQ(refusal(path), path + ": is a checkpoint of another configuration");
  const std::string not_one = scratch.str() + "/other.h5";
  h5::File::create(not_one).root().set("schema", "dpstudy.run/1");
  EXPECT_EQ(refusal(not_one), not_one + ": not a " + std::string(kCheckpointSchema) + " file");
  EXPECT_EQ(t.current_step(), 0);  // nothing of either was taken
}
