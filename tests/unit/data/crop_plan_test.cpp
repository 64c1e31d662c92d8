// Transform geometry: torchvision's numbers for Resize + CenterCrop, RandomResizedCrop's bounds,
// its fallback, and its determinism.
#include "data/crop_plan.h"

#include <gtest/gtest.h>

namespace dl::test {
namespace {

using namespace dl::data;

Transform square(int side, bool train) {
  Transform t;
  t.out = ImageShape{3, side, side};
  t.train = train;
  return t;
}

TEST(EvalResize, MatchesTorchvisionResize256CenterCrop224) {
  // transforms.Resize(256) on 500x375 (w x h) gives 341x256; CenterCrop(224) then cuts at
  // top = round(32 / 2) = 16 and left = round(117 / 2) = round(58.5) = 58 (Python rounds to even).
  const EvalResize r = plan_eval_resize(375, 500, square(224, false));
  EXPECT_EQ(r.resized_height, 256);
  EXPECT_EQ(r.resized_width, 341);
  EXPECT_EQ(r.top, 16);
  EXPECT_EQ(r.left, 58);
}

TEST(EvalResize, PortraitAndFullFraction) {
  Transform t = square(224, false);
  const EvalResize portrait = plan_eval_resize(640, 480, t);
  EXPECT_EQ(portrait.resized_width, 256);
  EXPECT_EQ(portrait.resized_height, 341);
  t.eval_crop_fraction = 1.0f;
  const EvalResize whole = plan_eval_resize(224, 224, t);
  EXPECT_EQ(whole.resized_height, 224);
  EXPECT_EQ(whole.top, 0);
  EXPECT_EQ(whole.left, 0);
}

TEST(TrainCrop, StaysInsideTheImage) {
  const Transform t = square(224, true);
  for (std::uint32_t seed = 0; seed < 500; ++seed) {
    std::mt19937 rng(seed);
    const TrainCrop c = plan_train_crop(300, 450, t, rng);
    ASSERT_GT(c.height, 0);
    ASSERT_GT(c.width, 0);
    ASSERT_GE(c.top, 0);
    ASSERT_GE(c.left, 0);
    ASSERT_LE(c.top + c.height, 300);
    ASSERT_LE(c.left + c.width, 450);
    const double area = static_cast<double>(c.height) * c.width / (300.0 * 450.0);
    ASSERT_GE(area, 0.07);
  }
}

TEST(TrainCrop, FallsBackToACenterCropWithinTheRatio) {
  // A 10x100 strip cannot hold a square of (almost) its whole area: all 10 attempts fail.
  Transform t = square(8, true);
  t.scale_min = 0.99f;
  t.ratio_min = 1.0f;
  t.ratio_max = 1.0f;
  std::mt19937 rng(3);
  const TrainCrop c = plan_train_crop(10, 100, t, rng);
  EXPECT_EQ(c.height, 10);
  EXPECT_EQ(c.width, 10);
  EXPECT_EQ(c.top, 0);
  EXPECT_EQ(c.left, 45);
}

TEST(TrainCrop, SameStreamSameCropDifferentStreamDifferentCrops) {
  const Transform t = square(224, true);
  std::mt19937 a(42);
  std::mt19937 b(42);
  const TrainCrop ca = plan_train_crop(256, 256, t, a);
  const TrainCrop cb = plan_train_crop(256, 256, t, b);
  EXPECT_EQ(ca.top, cb.top);
  EXPECT_EQ(ca.left, cb.left);
  EXPECT_EQ(ca.height, cb.height);
  EXPECT_EQ(ca.width, cb.width);
  EXPECT_EQ(ca.flip, cb.flip);
  int distinct = 0;
  int flips = 0;
  for (std::uint32_t seed = 0; seed < 100; ++seed) {
    std::mt19937 rng(seed);
    const TrainCrop c = plan_train_crop(256, 256, t, rng);
    if (c.top != ca.top || c.width != ca.width) ++distinct;
    if (c.flip) ++flips;
  }
  EXPECT_GT(distinct, 90);
  EXPECT_GT(flips, 30);  // probability 0.5
  EXPECT_LT(flips, 70);
}

}  // namespace
}  // namespace dl::test
