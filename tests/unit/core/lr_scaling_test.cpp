// --lr-scaling against a reference batch: the factor follows the batch each step averages over,
// and without --reference-batch the rules scale with the world size as before.
#include "core/lr_scaling.h"

#include <gtest/gtest.h>

namespace dl::test {
namespace {

TEST(LrScaling, AgainstAReferenceBatchTheRuleFollowsTheGlobalBatch) {
  // The search chose 344 where --lr was tuned at 64: linear 344/64, sqrt its root.
  EXPECT_DOUBLE_EQ(lr_scale("linear", 344, 344, false, 64).factor, 344.0 / 64);
  EXPECT_DOUBLE_EQ(lr_scale("sqrt", 256, 128, false, 64).factor, 2.0);
  EXPECT_TRUE(lr_scale("sqrt", 256, 128, false, 64).reference_given);
  // A smaller batch than the reference lowers the rate.
  EXPECT_DOUBLE_EQ(lr_scale("linear", 32, 32, false, 128).factor, 0.25);
  // --global-batch kept at 256, tuned at 128: the reference still counts.
  EXPECT_DOUBLE_EQ(lr_scale("linear", 256, 128, true, 128).factor, 2.0);
}

TEST(LrScaling, WithoutAReferenceTheRulesScaleWithTheRanks) {
  // 4 ranks x 64: --lr is one rank's batch's rate.
  EXPECT_DOUBLE_EQ(lr_scale("linear", 256, 64, false, 0).factor, 4.0);
  EXPECT_DOUBLE_EQ(lr_scale("sqrt", 256, 64, false, 0).factor, 2.0);
  EXPECT_EQ(lr_scale("sqrt", 256, 64, false, 0).reference, 64);
  EXPECT_FALSE(lr_scale("sqrt", 256, 64, false, 0).reference_given);
  // --global-batch keeps the step's batch: nothing grew, nothing scales.
  EXPECT_DOUBLE_EQ(lr_scale("linear", 256, 128, true, 0).factor, 1.0);
}

TEST(LrScaling, NoneKeepsTheRateWhateverTheBatches) {
  EXPECT_DOUBLE_EQ(lr_scale("none", 1024, 64, false, 64).factor, 1.0);
  EXPECT_DOUBLE_EQ(lr_scale("none", 1024, 64, false, 0).factor, 1.0);
}

}  // namespace
}  // namespace dl::test
