// The keys RunConfig::inert_keys names change no bit of a run.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <set>

#include "training_support.hpp"

using namespace dpstudy;
using namespace dpstudy::test;

// What RunConfig::inert_keys names (studies warn of it: docs/studies.md) must
// change no bit of the run: each key trained at two values where its
// condition holds. And the comparison can tell: an active key changes bits.
TEST(Training, KeysNamedInertChangeNoBit) {
  struct Case {
    std::string key, because;
    std::function<void(RunConfig&)> setting, one, other;
  };
  const auto none = [](RunConfig&) {};
  const std::vector<Case> cases = {
      {"momentum", "optimizer = sgd", [](RunConfig& c) { c.optimizer = OptimizerKind::sgd; },
       [](RunConfig& c) { c.momentum = 0.9; }, [](RunConfig& c) { c.momentum = 0.5; }},
      {"lr_milestones", "schedule = cosine", [](RunConfig& c) { c.schedule = LrSchedule::cosine; }, none,
       [](RunConfig& c) {
         c.lr_milestones = {0.5, 1.5};
       }},
      {"lr_decay", "schedule = linear", [](RunConfig& c) { c.schedule = LrSchedule::linear; }, none,
       [](RunConfig& c) { c.lr_decay = 0.5; }},
      {"lr_end_factor", "schedule = step",
       [](RunConfig& c) {
         c.schedule = LrSchedule::step;
         c.lr_milestones = {0.5};
       },
       none, [](RunConfig& c) { c.lr_end_factor = 0.5; }},
      {"lr_decay_steps", "schedule = cosine", [](RunConfig& c) { c.schedule = LrSchedule::cosine; }, none,
       [](RunConfig& c) { c.lr_decay_steps = 5; }},
      {"lr_base_batch", "lr_scaling = none", [](RunConfig& c) { c.workers = 2; }, none,
       [](RunConfig& c) { c.lr_base_batch = 256; }},
      {"warmup_start", "warmup_epochs = 0", none, none, [](RunConfig& c) { c.warmup_start = WarmupStart::base; }},
      {"local_sgd_from_epoch", "sync_period = 1", [](RunConfig& c) { c.workers = 4; }, none,
       [](RunConfig& c) { c.local_sgd_from_epoch = 1; }},
      {"group_sync_period", "sync_period = 1",
       [](RunConfig& c) {
         c.workers = 4;
         c.group_size = 2;
       },
       none, [](RunConfig& c) { c.group_sync_period = 2; }},
      {"group_sync_period", "group_size = 1",
       [](RunConfig& c) {
         c.workers = 4;
         c.sync_period = 4;
       },
       none, [](RunConfig& c) { c.group_sync_period = 2; }},
      {"pruning", "sparsity = 0", none, none, [](RunConfig& c) { c.pruning = Pruning::random; }},
      {"snip_batches", "sparsity = 0", none, none, [](RunConfig& c) { c.snip_batches = 2; }},
      {"snip_batches", "pruning = random",
       [](RunConfig& c) {
         c.sparsity = 0.5;
         c.pruning = Pruning::random;
       },
       none, [](RunConfig& c) { c.snip_batches = 2; }},
      {"block_size", "granularity = fine", [](RunConfig& c) { c.workers = 2; }, none,
       [](RunConfig& c) { c.block_size = 7; }},
      {"block_size", "granularity = coarse",
       [](RunConfig& c) {
         c.workers = 2;
         c.overlap = 0.5;
         c.granularity = Granularity::coarse;
       },
       none, [](RunConfig& c) { c.block_size = 7; }},
  };
  // One worker: nothing to average with, one shard in one order at any overlap.
  const auto local_sgd = [](RunConfig& c) { c.sync_period = 3; };
  const std::vector<Case> one_worker = {
      {"sync_period", "workers = 1", none, none, local_sgd},
      {"sync_period", "workers = 1", none, none, [](RunConfig& c) { c.sync_period = kNever; }},
      {"local_sgd_from_epoch", "workers = 1", local_sgd, none, [](RunConfig& c) { c.local_sgd_from_epoch = 1; }},
      {"average_momentum", "workers = 1", local_sgd, none, [](RunConfig& c) { c.average_momentum = true; }},
      {"overlap", "workers = 1", none, none, [](RunConfig& c) { c.overlap = 0.5; }},
      {"overlap", "workers = 1", [](RunConfig& c) { c.granularity = Granularity::coarse; }, none,
       [](RunConfig& c) { c.overlap = 0.5; }},
      {"overlap_mode", "workers = 1", [](RunConfig& c) { c.overlap = 0.5; }, none,
       [](RunConfig& c) { c.overlap_mode = OverlapMode::spread; }},
      {"dirichlet_alpha", "workers = 1", none, none, [](RunConfig& c) { c.dirichlet_alpha = 0.5; }},
      {"shard_owner", "workers = 1", none, none, [](RunConfig& c) { c.shard_owner = ShardOwner::group; }},
  };
  std::vector<Case> all = cases;
  all.insert(all.end(), one_worker.begin(), one_worker.end());
  all.push_back({"overlap_mode", "overlap = 0", [](RunConfig& c) { c.workers = 2; }, none,
                 [](RunConfig& c) { c.overlap_mode = OverlapMode::spread; }});
  all.push_back({"average_momentum", "optimizer = sgd",
                 [](RunConfig& c) {
                   c.workers = 2;
                   c.optimizer = OptimizerKind::sgd;
                   c.sync_period = 2;
                 },
                 none, [](RunConfig& c) { c.average_momentum = true; }});
  const std::string one_shard = "shard_owner = group with group_size = workers";
  const auto households = [](RunConfig& c) {
    c.workers = 2;
    c.group_size = 2;
    c.shard_owner = ShardOwner::group;
    c.sync_period = 2;
  };
  all.push_back({"overlap", one_shard, households, none, [](RunConfig& c) { c.overlap = 0.5; }});
  all.push_back({"dirichlet_alpha", one_shard, households, none, [](RunConfig& c) { c.dirichlet_alpha = 0.5; }});
  for (const Case& k : all) {
    RunConfig a = base_config();
    a.epochs = 2;
    k.setting(a);
    RunConfig b = a;
    k.one(a);
    k.other(b);
    const auto named = b.inert_keys();
    EXPECT_NE(std::find(named.begin(), named.end(), std::make_pair(k.key, k.because)), named.end())
        << k.key << " where " << k.because;
    // One run id for both: the study trains them once.
    EXPECT_EQ(canonical(a).key_values(), canonical(b).key_values()) << k.key << " where " << k.because;
    InProcessCommunicator comm(a.workers);
    RunResult ra = train_run(a, tiny(), data(), comm), rb = train_run(b, tiny(), data(), comm);
    if (a.workers == 1) {
      // One worker's "averaging" is with itself: its log of sync events (each at
      // divergence 0) differs with the period, while no trained bit does.
      for (double d : ra.syncs.divergence) EXPECT_EQ(d, 0.0);
      for (double d : rb.syncs.divergence) EXPECT_EQ(d, 0.0);
      ra.syncs = {};
      rb.syncs = {};
    }
    expect_same_bits(ra, rb, k.key + " where " + k.because);
  }
  // Every key canonical() may set is one proved above: configs across the rules
  // name no other inert key.
  std::set<std::string> proved_keys;
  for (const Case& k : all) proved_keys.insert(k.key);
  for (int variant = 0; variant < 8; ++variant) {
    RunConfig c = base_config();
    c.workers = variant % 2 == 0 ? 1 : 2;
    c.optimizer = variant & 2 ? OptimizerKind::sgd : OptimizerKind::momentum;
    c.schedule = variant & 4 ? LrSchedule::cosine : LrSchedule::step;
    c.sparsity = variant & 4 ? 0.5 : 0.0;
    c.pruning = Pruning::random;
    c.sync_period = variant >= 4 ? 2 : 1;
    if (variant == 5) {
      c.group_size = 2;
      c.shard_owner = ShardOwner::group;
    }
    for (const auto& [key, because] : c.inert_keys()) {
      EXPECT_TRUE(proved_keys.count(key))
          << key << " where " << because << ": canonicalised without a test of its bits";
    }
  }
  // The same comparison sees a key that is not inert: momentum under momentum SGD.
  RunConfig a = base_config(), b = base_config();
  b.momentum = 0.5;
  const auto named = a.inert_keys();
  EXPECT_TRUE(std::none_of(named.begin(), named.end(), [](const auto& kv) { return kv.first == "momentum"; }));
  InProcessCommunicator comm(1);
  EXPECT_NE(bits(train_run(a, tiny(), data(), comm).train.loss), bits(train_run(b, tiny(), data(), comm).train.loss));
}
