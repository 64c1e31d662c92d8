// The batch's conversion to the model's tensor: torchvision's (x / 255 - mean) / std for every
// byte value and channel, NCHW and NHWC placing each value where its index says, uint8 NHWC too.
#include "loader_module/batch_convert.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

namespace dl::test {
namespace {

using dl::data::ImageShape;
using dl::loader_module::normalize_batch;
using dl::loader_module::to_channels_last;

constexpr std::array<float, 3> kMean{0.485f, 0.456f, 0.406f};
constexpr std::array<float, 3> kStd{0.229f, 0.224f, 0.225f};

// Two 3 x 2 x 43 images holding every byte value somewhere.
std::vector<std::uint8_t> batch_bytes(ImageShape s, int n) {
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(n) * s.bytes());
  for (std::size_t k = 0; k < bytes.size(); ++k) bytes[k] = static_cast<std::uint8_t>(k * 7 % 256);
  return bytes;
}

TEST(BatchConvert, NormalizesAsTorchvisionWithinFloatRounding) {
  const ImageShape s{3, 2, 43};
  const auto src = batch_bytes(s, 2);
  std::vector<float> out(src.size());
  normalize_batch(src.data(), 2, s, kMean, kStd, false, out.data());
  double worst = 0;
  for (std::size_t k = 0; k < src.size(); ++k) {
    const std::size_t c = (k % s.bytes()) / (2 * 43);
    const float expected = (static_cast<float>(src[k]) / 255.0f - kMean[c]) / kStd[c];
    worst = std::max(worst, static_cast<double>(std::fabs(out[k] - expected)));
  }
  EXPECT_LT(worst, 2e-6);
  EXPECT_GT(worst, 0.0);  // the affine form is not bit-equal: the bound above is what holds
}

TEST(BatchConvert, ChannelsLastPutsEachValueAtItsNhwcIndex) {
  const ImageShape s{3, 4, 5};
  const auto src = batch_bytes(s, 2);
  std::vector<float> nchw(src.size()), nhwc(src.size());
  normalize_batch(src.data(), 2, s, kMean, kStd, false, nchw.data());
  normalize_batch(src.data(), 2, s, kMean, kStd, true, nhwc.data());
  std::vector<std::uint8_t> bytes_nhwc(src.size());
  to_channels_last(src.data(), 2, s, bytes_nhwc.data());
  for (std::size_t i = 0; i < 2; ++i) {
    for (std::size_t c = 0; c < 3; ++c) {
      for (std::size_t p = 0; p < 20; ++p) {
        const std::size_t at_nchw = i * 60 + c * 20 + p;
        const std::size_t at_nhwc = i * 60 + p * 3 + c;
        EXPECT_EQ(nhwc[at_nhwc], nchw[at_nchw]);
        EXPECT_EQ(bytes_nhwc[at_nhwc], src[at_nchw]);
      }
    }
  }
}

TEST(BatchConvert, GreyImagesUseTheFirstChannelsStatistics) {
  const ImageShape s{1, 1, 2};
  const std::vector<std::uint8_t> src{0, 255};
  std::vector<float> out(2);
  normalize_batch(src.data(), 1, s, {0.5f, 9.0f, 9.0f}, {0.25f, 9.0f, 9.0f}, false, out.data());
  EXPECT_NEAR(out[0], -2.0f, 1e-6);
  EXPECT_NEAR(out[1], 2.0f, 1e-6);
}

}  // namespace
}  // namespace dl::test
