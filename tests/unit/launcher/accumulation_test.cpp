// --global-batch: the split of the recipe's batch over ranks and micro-batches
// (core/accumulation.h); what the plan and the program's environment make of it is in
// plan_test.cpp.
#include <gtest/gtest.h>

#include <stdexcept>

#include "core/accumulation.h"
#include "support/matchers.h"

namespace dl::test {
namespace {

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

}  // namespace
}  // namespace dl::test
