// --global-batch: the split of the recipe's batch over ranks and micro-batches (accumulation.h),
// and what the plan and the program's environment make of it.
#include <gtest/gtest.h>

#include <map>
#include <stdexcept>

#include "core/accumulation.h"
#include "core/errors.h"
#include "launcher/launch.h"
#include "launcher/plan.h"
#include "support/matchers.h"

namespace dl::test {
namespace {

Facts cpu_machine(int cores) {
  Facts f;
  f.cpu.online = f.cpu.usable = cores;
  f.memory.total = 16ull << 30;
  f.memory.usable = 12ull << 30;
  f.memory.usable_reason = "MemAvailable";
  f.shm = {true, 8ull << 30, 8ull << 30};
  f.gpu.note = "NVML not found";
  return f;
}

TEST(GlobalBatchSplit, FewestThenMostEvenPieces) {
  const Accumulation whole = split_global_batch(256, 1, 256);
  EXPECT_EQ(whole.per_rank, 256);
  EXPECT_EQ(whole.micro, 256);
  EXPECT_EQ(whole.steps, 1);

  const Accumulation four = split_global_batch(256, 1, 64);
  EXPECT_EQ(four.per_rank, 256);
  EXPECT_EQ(four.micro, 64);
  EXPECT_EQ(four.steps, 4);

  // 200 in pieces of at most 136: two of 100, not 136 + 64.
  const Accumulation even = split_global_batch(200, 1, 136);
  EXPECT_EQ(even.steps, 2);
  EXPECT_EQ(even.micro, 100);

  // Two ranks: each takes 128, in 3 pieces of at most 50 (43 + 43 + 42).
  const Accumulation ranks = split_global_batch(256, 2, 50);
  EXPECT_EQ(ranks.per_rank, 128);
  EXPECT_EQ(ranks.steps, 3);
  EXPECT_EQ(ranks.micro, 43);
  EXPECT_LE(ranks.micro, 50);
  EXPECT_GE(ranks.micro * ranks.steps, ranks.per_rank);

  // A batch that fits more than the share: one piece, the share.
  EXPECT_EQ(split_global_batch(64, 2, 1024).micro, 32);
}

TEST(GlobalBatchSplit, UnevenShareIsRefused) {
  try {
    split_global_batch(255, 2, 64);
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "multiple of the 2 ranks")) << e.what();
  }
}

TEST(GlobalBatchSplit, Described) {
  EXPECT_EQ(describe(split_global_batch(256, 2, 64), 2),
            "128 per rank x 2 ranks, in 2 micro-batches of at most 64");
  EXPECT_EQ(describe(split_global_batch(101, 1, 64), 1), "101 in 2 micro-batches of at most 51");
  EXPECT_EQ(describe(split_global_batch(64, 1, 64), 1), "64 at once");
}

Request global_request(std::int64_t global, int batch, const std::string& nproc = "1") {
  Request r;
  r.default_program = true;
  r.global_batch = Sourced<std::int64_t>{global, "--global-batch"};
  r.batch_size = {batch, "--batch-size"};
  r.ranks.nproc_per_node = {nproc, "--nproc-per-node"};
  return r;
}

TEST(PlanGlobalBatch, KeepsTheRecipesBatchAcrossRanks) {
  const Plan one = make_plan(cpu_machine(4), global_request(256, 64));
  ASSERT_TRUE(one.accumulation);
  EXPECT_EQ(one.batch_size.value, 256) << "the loader's batch is the rank's share";
  EXPECT_EQ(one.accumulation->micro, 64);
  EXPECT_EQ(one.accumulation->steps, 4);
  EXPECT_EQ(one.global_batch.value, 256);
  EXPECT_TRUE(contains(one.batch_size.reason, "--global-batch 256")) << one.batch_size.reason;
  EXPECT_TRUE(contains(one.global_batch.reason, "4 micro-batches of at most 64"))
      << one.global_batch.reason;

  const Plan two = make_plan(cpu_machine(4), global_request(256, 64, "2"));
  ASSERT_TRUE(two.accumulation);
  EXPECT_EQ(two.batch_size.value, 128);
  EXPECT_EQ(two.accumulation->steps, 2);
  EXPECT_EQ(two.global_batch.value, 256) << "the same batch per optimizer step on 2 ranks";

  Request scaled = global_request(256, 64, "2");
  scaled.lr = {0.001, "--lr"};
  scaled.lr_scaling = {"linear", "--lr-scaling"};
  const Plan kept = make_plan(cpu_machine(4), scaled);
  EXPECT_EQ(kept.learning_rate.value, "0.001") << "the batch did not grow with the ranks";
  EXPECT_TRUE(contains(kept.learning_rate.reason, "--global-batch")) << kept.learning_rate.reason;
}

TEST(PlanGlobalBatch, UnsetKeepsBatchTimesRanks) {
  Request r = global_request(256, 64, "2");
  r.global_batch.reset();
  const Plan p = make_plan(cpu_machine(4), r);
  EXPECT_FALSE(p.accumulation);
  EXPECT_EQ(p.batch_size.value, 64);
  EXPECT_EQ(p.global_batch.value, 128);
}

TEST(PlanGlobalBatch, NotAMultipleOfTheRanksIsAUsageError) {
  try {
    make_plan(cpu_machine(4), global_request(255, 64, "2"));
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.code(), exit_code::kUsage);
    EXPECT_TRUE(contains(e.what(), "--global-batch 255")) << e.what();
  }
}

TEST(PlanGlobalBatch, ProgramAfterDashDashIsWarnedItMustSplit) {
  Request r = global_request(256, 64);
  r.default_program = false;
  const Plan p = make_plan(cpu_machine(4), r);
  bool warned = false;
  for (const auto& w : p.warnings) warned = warned || contains(w, "DL_MICRO_BATCH=64");
  EXPECT_TRUE(warned);
  // dl-train splits them itself: no such warning.
  for (const auto& w : make_plan(cpu_machine(4), global_request(256, 64)).warnings) {
    EXPECT_FALSE(contains(w, "DL_MICRO_BATCH")) << w;
  }
}

TEST(LaunchEnvGlobalBatch, MicroBatchOnlyWhereABatchIsSplit) {
  Launch l;
  l.workspace = "/ws";
  l.run_dir = "/ws/runs/r";
  l.plan = make_plan(cpu_machine(4), global_request(256, 64));
  const auto none = [](const char*) { return std::optional<std::string>{}; };
  std::map<std::string, std::string> env;
  for (const auto& [k, v] : child_environment(l, none)) env[k] = v;
  EXPECT_EQ(env.at("DL_BATCH_SIZE"), "256");
  EXPECT_EQ(env.at("DL_MICRO_BATCH"), "64");
  EXPECT_EQ(env.at("DL_GLOBAL_BATCH"), "256") << "dl-train then keeps --lr whatever the ranks";

  l.plan = make_plan(cpu_machine(4), global_request(64, 64));
  env.clear();
  for (const auto& [k, v] : child_environment(l, none)) env[k] = v;
  EXPECT_EQ(env.at("DL_BATCH_SIZE"), "64");
  EXPECT_EQ(env.count("DL_MICRO_BATCH"), 0u) << "a batch that runs whole leaves it unset";
}

}  // namespace
}  // namespace dl::test
