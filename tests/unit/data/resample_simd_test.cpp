// The AVX2 horizontal pass (data/resample.cpp) gives the scalar pass's bytes, which are Pillow's:
// random RGB images, every shrink factor up to 8 and growing too, crops at fractional boxes, rows
// with padding, noise and the extremes (all 0, all 255) that test the clipping.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "data/resample.h"

namespace dl::data {
namespace {

struct Image {
  int height, width;
  std::size_t stride;
  std::vector<std::uint8_t> bytes;
};

Image random_image(std::mt19937& rng, int height, int width, int padding, int style) {
  Image im{
      height, width, static_cast<std::size_t>(width) * 3 + static_cast<std::size_t>(padding), {}};
  // The image is the last thing in its buffer: a load past a row's end would be caught by ASan.
  im.bytes.resize(im.stride * static_cast<std::size_t>(height - 1) +
                  static_cast<std::size_t>(width) * 3);
  std::uniform_int_distribution<int> byte(0, 255);
  for (auto& b : im.bytes) {
    b = static_cast<std::uint8_t>(style == 0 ? byte(rng) : style == 1 ? 255 : 0);
  }
  return im;
}

// Runs `resize` with the SIMD pass and without, and compares.
template <typename Resize>
void expect_same(const Image& im, int out_h, int out_w, const std::string& what, Resize resize) {
  std::vector<std::uint8_t> fast(static_cast<std::size_t>(out_h * out_w * 3), 1);
  std::vector<std::uint8_t> plain(fast.size(), 2);
  set_resample_simd(true);
  resize(im, fast.data(), out_h, out_w);
  set_resample_simd(false);
  resize(im, plain.data(), out_h, out_w);
  set_resample_simd(true);
  ASSERT_EQ(fast, plain) << what;
}

TEST(ResampleSimd, SameBytesAsTheScalarPass) {
  if (!resample_simd_active()) GTEST_SKIP() << "this CPU has no AVX2: only the scalar pass runs";
  std::mt19937 rng(7);
  int cases = 0;
  for (int style = 0; style < 3; ++style) {
    for (const int width : {1, 2, 3, 4, 5, 7, 9, 13, 31, 64, 224, 225, 480, 999}) {
      for (const int out_w : {1, 3, 8, 37, 112, 224, 500}) {
        const int height = 1 + static_cast<int>(rng() % 9);
        const int padding = static_cast<int>(rng() % 5);
        const Image im = random_image(rng, height, width, padding, style);
        const int out_h = 1 + static_cast<int>(rng() % 6);
        const std::string what = std::to_string(height) + "x" + std::to_string(width) + " -> " +
                                 std::to_string(out_h) + "x" + std::to_string(out_w) + " style " +
                                 std::to_string(style);
        expect_same(im, out_h, out_w, what, [](const Image& s, std::uint8_t* d, int h, int w) {
          resample_antialias_u8(s.bytes.data(), s.height, s.width, s.stride, 3, d, h, w,
                                static_cast<std::size_t>(w) * 3);
        });
        // A crop box with fractional edges, as a crop mapped onto a scaled decode is.
        std::uniform_real_distribution<double> frac(0.0, 1.0);
        Box box;
        box.left = frac(rng) * width * 0.4;
        box.right = width - frac(rng) * width * 0.4;
        box.top = frac(rng) * height * 0.4;
        box.bottom = height - frac(rng) * height * 0.4;
        expect_same(im, out_h, out_w, what + " box",
                    [&](const Image& s, std::uint8_t* d, int h, int w) {
                      resample_box_u8(s.bytes.data(), s.height, s.width, s.stride, 3, box, d, h, w,
                                      static_cast<std::size_t>(w) * 3);
                    });
        cases += 2;
      }
    }
  }
  EXPECT_EQ(cases, 3 * 14 * 7 * 2);
}

}  // namespace
}  // namespace dl::data
