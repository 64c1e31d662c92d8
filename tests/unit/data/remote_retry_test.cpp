// The wait between tries of a remote read (dl::data::retry_wait_seconds): doubling from the base,
// capped at 8 s, and defined for every try count AWS_MAX_ATTEMPTS allows (the shift it replaced
// was undefined from try 33; UBSan in the asan preset would flag it here).
#include <gtest/gtest.h>

#include "data/remote_store.h"

namespace {

using dl::data::retry_wait_seconds;

TEST(RemoteRetry, WaitDoublesFromTheBaseUpToEightSeconds) {
  EXPECT_DOUBLE_EQ(retry_wait_seconds(2, 0.25), 0.25);
  EXPECT_DOUBLE_EQ(retry_wait_seconds(3, 0.25), 0.5);
  EXPECT_DOUBLE_EQ(retry_wait_seconds(4, 0.25), 1.0);
  EXPECT_DOUBLE_EQ(retry_wait_seconds(7, 0.25), 8.0);
  EXPECT_DOUBLE_EQ(retry_wait_seconds(8, 0.25), 8.0);
}

TEST(RemoteRetry, EveryTryUpToTheHundredAllowedWaitsAtMostTheCap) {
  double previous = 0.0;
  for (int next = 2; next <= 100; ++next) {
    const double wait = retry_wait_seconds(next, 0.25);
    EXPECT_GE(wait, previous) << "try " << next;
    EXPECT_LE(wait, 8.0) << "try " << next;
    previous = wait;
  }
  EXPECT_DOUBLE_EQ(retry_wait_seconds(100, 0.25), 8.0);
  // A zero base (tests that retry at once) stays zero at any count.
  EXPECT_DOUBLE_EQ(retry_wait_seconds(100, 0.0), 0.0);
}

}  // namespace
