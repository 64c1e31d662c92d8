// Pixel transforms: center crop placement, flips that mirror, channel conversion, determinism,
// the in-memory fast path, and the resize fallback against OpenCV.
#include "data/transform.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <vector>

#include "data/memory_source.h"
#include "data/resample.h"
#include "data/resize.h"

namespace dl::test {
namespace {

using namespace dl::data;

using Bytes = std::vector<std::uint8_t>;

// An interleaved image whose pixel (y, x, c) is distinct enough to locate: 7y + 3x + 50c.
Bytes pattern(int h, int w, int c) {
  Bytes img(static_cast<std::size_t>(h * w * c));
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      for (int k = 0; k < c; ++k) {
        img[static_cast<std::size_t>((y * w + x) * c + k)] =
            static_cast<std::uint8_t>(7 * y + 3 * x + 50 * k);
      }
    }
  }
  return img;
}

Bytes random_image(std::size_t bytes, std::uint32_t seed) {
  std::mt19937 rng(seed);
  Bytes img(bytes);
  for (auto& b : img) b = static_cast<std::uint8_t>(rng());
  return img;
}

// RandomResizedCrop that keeps the whole image at its size: only the flip remains.
Transform flip_only(int c, int side, float probability) {
  Transform t;
  t.out = ImageShape{c, side, side};
  t.train = true;
  t.scale_min = t.scale_max = 1.0f;
  t.ratio_min = t.ratio_max = 1.0f;
  t.flip_probability = probability;
  return t;
}

TEST(Transform, EvalCenterCropPicksTheMiddle) {
  // 24 x 48 (h x w), fraction 1: no resize needed, the 24 x 24 window starts at column 12.
  const Bytes img = pattern(24, 48, 3);
  Transform t;
  t.out = ImageShape{3, 24, 24};
  t.eval_crop_fraction = 1.0f;
  Bytes out(t.out.bytes());
  std::mt19937 rng(0);
  transform_interleaved(img.data(), 24, 48, 3, 48 * 3, t, rng, out.data());
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < 24; y += 5) {
      for (int x = 0; x < 24; x += 5) {
        ASSERT_EQ(out[static_cast<std::size_t>((c * 24 + y) * 24 + x)],
                  static_cast<std::uint8_t>(7 * y + 3 * (x + 12) + 50 * c))
            << c << " " << y << " " << x;
      }
    }
  }
}

TEST(Transform, EvalResizesThenCropsToTheOutputSize) {
  const Bytes img = random_image(60 * 80 * 3, 1);
  Transform t;
  t.out = ImageShape{3, 28, 28};
  Bytes out(t.out.bytes() + 16, 0xAB);  // a guard zone: nothing written past the sample
  std::mt19937 rng(0);
  transform_interleaved(img.data(), 60, 80, 3, 80 * 3, t, rng, out.data());
  for (std::size_t i = t.out.bytes(); i < out.size(); ++i) ASSERT_EQ(out[i], 0xAB);
}

TEST(Transform, FlipMirrorsEveryRow) {
  const int side = 9;
  const Bytes img = pattern(side, side, 3);
  Bytes plain(static_cast<std::size_t>(3 * side * side));
  Bytes flipped(plain.size());
  std::mt19937 rng_a(5);
  std::mt19937 rng_b(5);
  transform_interleaved(img.data(), side, side, 3, side * 3, flip_only(3, side, 0.0f), rng_a,
                        plain.data());
  transform_interleaved(img.data(), side, side, 3, side * 3, flip_only(3, side, 1.0f), rng_b,
                        flipped.data());
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < side; ++y) {
      for (int x = 0; x < side; ++x) {
        const std::size_t at = static_cast<std::size_t>((c * side + y) * side + x);
        const std::size_t mirror = static_cast<std::size_t>((c * side + y) * side + side - 1 - x);
        ASSERT_EQ(plain[at], static_cast<std::uint8_t>(7 * y + 3 * x + 50 * c));
        ASSERT_EQ(flipped[at], plain[mirror]);
      }
    }
  }
}

TEST(Transform, RandomResizedCropIsDeterministicPerStream) {
  const Bytes img = random_image(64 * 64 * 3, 2);
  Transform t;
  t.out = ImageShape{3, 32, 32};
  t.train = true;
  auto run = [&](std::uint32_t seed) {
    Bytes out(t.out.bytes());
    std::mt19937 rng(seed);
    transform_interleaved(img.data(), 64, 64, 3, 64 * 3, t, rng, out.data());
    return out;
  };
  EXPECT_EQ(run(11), run(11));
  EXPECT_NE(run(11), run(12));
}

TEST(Transform, PlanarAndInterleavedAgree) {
  // The same image given as CHW planes (CIFAR) and as HWC (a decoder) augments identically.
  const int h = 20;
  const int w = 24;
  const Bytes hwc = random_image(static_cast<std::size_t>(h * w * 3), 3);
  Bytes chw(hwc.size());
  for (int i = 0; i < h * w; ++i) {
    for (int c = 0; c < 3; ++c) {
      chw[static_cast<std::size_t>(c * h * w + i)] = hwc[static_cast<std::size_t>(i * 3 + c)];
    }
  }
  Transform t;
  t.out = ImageShape{3, 16, 16};
  t.train = true;
  Bytes a(t.out.bytes());
  Bytes b(t.out.bytes());
  std::mt19937 rng_a(9);
  std::mt19937 rng_b(9);
  transform_planar(chw.data(), ImageShape{3, h, w}, t, rng_a, a.data());
  transform_interleaved(hwc.data(), h, w, 3, static_cast<std::size_t>(w * 3), t, rng_b, b.data());
  EXPECT_EQ(a, b);
}

TEST(Transform, GreyToThreeChannelsAndBack) {
  const Bytes grey = pattern(6, 6, 1);
  Transform to_rgb = flip_only(3, 6, 0.0f);
  Bytes rgb(to_rgb.out.bytes());
  std::mt19937 rng(0);
  transform_planar(grey.data(), ImageShape{1, 6, 6}, to_rgb, rng, rgb.data());
  for (std::size_t i = 0; i < 36; ++i) {
    ASSERT_EQ(rgb[i], grey[i]);
    ASSERT_EQ(rgb[36 + i], grey[i]);
    ASSERT_EQ(rgb[72 + i], grey[i]);
  }
  // A pure red CHW image becomes luma 0.299 * 255 = 76.
  Bytes red(3 * 36, 0);
  std::fill(red.begin(), red.begin() + 36, 255);
  Transform to_grey = flip_only(1, 6, 0.0f);
  Bytes out(36);
  transform_planar(red.data(), ImageShape{3, 6, 6}, to_grey, rng, out.data());
  EXPECT_EQ(out[0], 76);
  EXPECT_FALSE(channels_convertible(4, 3));
  EXPECT_THROW(transform_planar(red.data(), ImageShape{2, 6, 6}, to_grey, rng, out.data()),
               std::invalid_argument);
}

TEST(MemorySource, EvalAtNativeSizeCopiesAndTrainAugments) {
  const Bytes pixels = random_image(2 * 3 * 8 * 8, 4);
  const MemorySource source(pixels, {0, 1}, ImageShape{3, 8, 8}, 2, "test");
  Transform t;
  t.out = ImageShape{3, 8, 8};
  Bytes out(t.out.bytes());
  std::mt19937 rng(0);
  ASSERT_TRUE(source.load(1, t, rng, out.data()));
  EXPECT_TRUE(std::equal(out.begin(), out.end(), pixels.begin() + 192));
  t.train = true;
  ASSERT_TRUE(source.load(1, t, rng, out.data()));
  EXPECT_FALSE(std::equal(out.begin(), out.end(), pixels.begin() + 192));
}

// Pillow's shrinking filter (its bytes are held to Pillow's own in tests/python/dl_loader_test.py):
// a flat image stays flat, a ramp stays a ramp, and a shrink along one axis leaves the other.
TEST(Resample, ShrinkingKeepsFlatsAndRampsAndTheOtherAxis) {
  const Bytes flat(40 * 30 * 3, 77);
  Bytes out(17 * 11 * 3);
  resample_antialias_u8(flat.data(), 40, 30, 30 * 3, 3, out.data(), 17, 11, 11 * 3);
  for (const std::uint8_t v : out) ASSERT_EQ(v, 77);

  Bytes ramp(1 * 100);
  for (int x = 0; x < 100; ++x)
    ramp[static_cast<std::size_t>(x)] = static_cast<std::uint8_t>(2 * x);
  Bytes small(1 * 37);
  resample_antialias_u8(ramp.data(), 1, 100, 100, 1, small.data(), 1, 37, 37);
  for (std::size_t x = 1; x < small.size(); ++x) ASSERT_GT(small[x], small[x - 1]) << x;
  EXPECT_NEAR(small[18], 99, 2);  // the middle of the ramp

  const Bytes tall = random_image(8 * 5 * 1, 3);
  Bytes half(4 * 5);
  resample_antialias_u8(tall.data(), 8, 5, 5, 1, half.data(), 4, 5, 5);
  Bytes col(4), col_alone(4);
  for (int y = 0; y < 4; ++y)
    col[static_cast<std::size_t>(y)] = half[static_cast<std::size_t>(y) * 5 + 2];
  Bytes column(8);
  for (int y = 0; y < 8; ++y)
    column[static_cast<std::size_t>(y)] = tall[static_cast<std::size_t>(y) * 5 + 2];
  resample_antialias_u8(column.data(), 8, 1, 1, 1, col_alone.data(), 4, 1, 1);
  EXPECT_EQ(col, col_alone);  // each column filtered alone
}

TEST(Resize, FallbackIsCloseToTheBuildsResize) {
  const Bytes img = random_image(13 * 17 * 3, 5);
  Bytes fast(30 * 40 * 3);
  Bytes plain(fast.size());
  resize_u8(img.data(), 13, 17, 17 * 3, 3, fast.data(), 30, 40, 40 * 3);
  resize_bilinear_u8(img.data(), 13, 17, 17 * 3, 3, plain.data(), 30, 40, 40 * 3);
  for (std::size_t i = 0; i < fast.size(); ++i) {
    ASSERT_LE(std::abs(fast[i] - plain[i]), 1) << i;
  }
}

}  // namespace
}  // namespace dl::test
