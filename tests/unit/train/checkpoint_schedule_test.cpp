// The pure parts of exact resume: --checkpoint-every's values and schedule, the epoch position's
// round trip through a checkpoint's extra dict (and its refusal of a damaged one), and where a
// resumed epoch goes on under the same or another global batch.
#include <gtest/gtest.h>

#include <stdexcept>

#include "core/checkpoint_every.h"
#include "train/resume/epoch_position.h"

namespace dl::test {
namespace {

using dl::CheckpointEvery;
using dl::parse_checkpoint_every;
using train::EpochPosition;

TEST(CheckpointEvery, ParsesStepsAndTimes) {
  EXPECT_EQ(parse_checkpoint_every("500")->steps, 500);
  EXPECT_EQ(parse_checkpoint_every("500")->seconds, 0);
  EXPECT_EQ(parse_checkpoint_every("30s")->seconds, 30);
  EXPECT_EQ(parse_checkpoint_every("10m")->seconds, 600);
  EXPECT_EQ(parse_checkpoint_every("1.5h")->seconds, 5400);
  EXPECT_FALSE(parse_checkpoint_every("0")->enabled());
  EXPECT_FALSE(parse_checkpoint_every("0m")->enabled());
  for (const char* bad :
       {"", "m", "5x", "-5", "5 m", " 5m", "1e3s", "infm", "1.2.3m", ".m", "10d", "999999h"}) {
    EXPECT_FALSE(parse_checkpoint_every(bad).has_value()) << bad;
  }
}

TEST(CheckpointEvery, DueOnStepMultiplesOrAfterTheTime) {
  const CheckpointEvery steps = *parse_checkpoint_every("4");
  EXPECT_FALSE(steps.due(0, 1e9));
  EXPECT_FALSE(steps.due(3, 1e9));
  EXPECT_TRUE(steps.due(4, 0));
  EXPECT_TRUE(steps.due(8, 0));
  const CheckpointEvery time = *parse_checkpoint_every("10m");
  EXPECT_FALSE(time.due(4, 599.9));
  EXPECT_TRUE(time.due(5, 600));
  EXPECT_FALSE(CheckpointEvery{}.due(1000, 1e9));
  EXPECT_EQ(time.describe(), "every 10 min");
  EXPECT_EQ(steps.describe(), "every 4 steps");
  EXPECT_EQ(parse_checkpoint_every("2h")->describe(), "every 2 h");
  EXPECT_EQ(parse_checkpoint_every("45s")->describe(), "every 45 s");
  EXPECT_EQ(CheckpointEvery{}.describe(), "at epoch ends only");
}

EpochPosition sample_position() {
  EpochPosition p;
  p.epoch = 3;
  p.batches = 17;
  p.global_batch = 64;
  p.loss_sum = 1234.5;
  p.correct = 800;
  p.samples = 1088;
  p.overflow_steps = 2;
  p.skipped[1] = 5;
  return p;
}

TEST(EpochPosition, RoundTripsThroughTheExtraDict) {
  train::ExtraMap extra{{"global_step", std::int64_t{7}}};
  EXPECT_FALSE(train::get_position(extra).has_value());
  train::put_position(extra, sample_position());
  const auto back = train::get_position(extra);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->epoch, 3);
  EXPECT_EQ(back->batches, 17);
  EXPECT_EQ(back->global_batch, 64);
  EXPECT_EQ(back->loss_sum, 1234.5);
  EXPECT_EQ(back->correct, 800);
  EXPECT_EQ(back->samples, 1088);
  EXPECT_EQ(back->overflow_steps, 2);
  EXPECT_EQ(back->skipped, sample_position().skipped);
}

TEST(EpochPosition, ADamagedPositionIsRefused) {
  train::ExtraMap extra;
  train::put_position(extra, sample_position());
  train::ExtraMap missing = extra;
  missing.erase("position_batches");
  EXPECT_THROW(train::get_position(missing), std::invalid_argument);
  train::ExtraMap negative = extra;
  negative["position_batches"] = std::int64_t{-1};
  EXPECT_THROW(train::get_position(negative), std::invalid_argument);
  train::ExtraMap wrong_type = extra;
  wrong_type["position_samples"] = 3.5;
  EXPECT_THROW(train::get_position(wrong_type), std::invalid_argument);
  train::ExtraMap zero_batch = extra;
  zero_batch["position_global_batch"] = std::int64_t{0};
  EXPECT_THROW(train::get_position(zero_batch), std::invalid_argument);
}

// A checkpoint written before "cut short" (the sixth skip reason, position_skipped_5) resumes
// with none counted; the five reasons it has are still required.
TEST(EpochPosition, APositionFromBeforeTheCutShortCountStillLoads) {
  EpochPosition p = sample_position();
  p.skipped[static_cast<std::size_t>(data::SkipReason::kCutShort)] = 4;
  train::ExtraMap extra;
  train::put_position(extra, p);
  EXPECT_EQ(train::get_position(extra)->skipped, p.skipped);
  extra.erase("position_skipped_5");
  const auto old = train::get_position(extra);
  ASSERT_TRUE(old.has_value());
  EXPECT_EQ(old->skipped, sample_position().skipped);
  extra.erase("position_skipped_4");
  EXPECT_THROW(train::get_position(extra), std::invalid_argument);
}

TEST(EpochPosition, ResumeStartsAtTheNextBatchOrTheLastWholeOneOfAnotherSize) {
  const EpochPosition p = sample_position();  // 17 batches of 64: 1088 samples taken
  const auto same = train::resume_start(p, 64);
  EXPECT_EQ(same.first_batch, 17);
  EXPECT_TRUE(same.exact);
  const auto halved = train::resume_start(p, 32);  // 2 ranks of 16 instead of 64: no repeat
  EXPECT_EQ(halved.first_batch, 34);
  EXPECT_TRUE(halved.exact);
  const auto bigger = train::resume_start(p, 100);  // 10 batches of 100, 88 samples again
  EXPECT_EQ(bigger.first_batch, 10);
  EXPECT_FALSE(bigger.exact);
  EXPECT_EQ(bigger.repeated, 88);
}

}  // namespace
}  // namespace dl::test
