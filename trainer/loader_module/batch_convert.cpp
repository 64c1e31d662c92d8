// The batch's conversion to the model's tensor (see batch_convert.h). Per channel the affine map
// x * (1 / (255 std)) - mean / std is torchvision's (x / 255 - mean) / std up to float rounding
// (a few 1e-7), and one multiply-add a byte lets the compiler vectorise the plane loop.
#include "loader_module/batch_convert.h"

#include <algorithm>
#include <cstddef>

namespace dl::loader_module {
namespace {

struct Affine {
  float scale = 1.0f;
  float shift = 0.0f;
};

Affine channel_map(const std::array<float, 3>& mean, const std::array<float, 3>& std, int c) {
  const std::size_t k = static_cast<std::size_t>(std::min(c, 2));
  return {1.0f / (255.0f * std[k]), -mean[k] / std[k]};
}

}  // namespace

void normalize_batch(const std::uint8_t* src, std::int64_t n, data::ImageShape shape,
                     const std::array<float, 3>& mean, const std::array<float, 3>& std,
                     bool channels_last, float* dst) {
  const std::size_t plane = static_cast<std::size_t>(shape.height) * shape.width;
  const std::size_t channels = static_cast<std::size_t>(shape.channels);
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint8_t* image = src + static_cast<std::size_t>(i) * shape.bytes();
    float* out = dst + static_cast<std::size_t>(i) * shape.bytes();
    for (std::size_t c = 0; c < channels; ++c) {
      const Affine a = channel_map(mean, std, static_cast<int>(c));
      const std::uint8_t* in = image + c * plane;
      if (channels_last) {
        for (std::size_t p = 0; p < plane; ++p) out[p * channels + c] = in[p] * a.scale + a.shift;
      } else {
        float* o = out + c * plane;
        for (std::size_t p = 0; p < plane; ++p) o[p] = in[p] * a.scale + a.shift;
      }
    }
  }
}

void to_channels_last(const std::uint8_t* src, std::int64_t n, data::ImageShape shape,
                      std::uint8_t* dst) {
  const std::size_t plane = static_cast<std::size_t>(shape.height) * shape.width;
  const std::size_t channels = static_cast<std::size_t>(shape.channels);
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint8_t* image = src + static_cast<std::size_t>(i) * shape.bytes();
    std::uint8_t* out = dst + static_cast<std::size_t>(i) * shape.bytes();
    for (std::size_t c = 0; c < channels; ++c) {
      for (std::size_t p = 0; p < plane; ++p) out[p * channels + c] = image[c * plane + p];
    }
  }
}

}  // namespace dl::loader_module
