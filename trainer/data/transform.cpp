// Pixel work of the transforms (see transform.h). Scratch buffers are thread_local: each loader
// worker reuses its own, so steady-state loading allocates nothing.
#include "data/transform.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "data/crop_plan.h"
#include "data/resize.h"

namespace dl::data {
namespace {

std::uint8_t* scratch(std::vector<std::uint8_t>& buffer, std::size_t bytes) {
  if (buffer.size() < bytes) buffer.resize(bytes);
  return buffer.data();
}

void require_convertible(int channels, int out_channels) {
  if (!channels_convertible(channels, out_channels)) {
    throw std::invalid_argument("cannot turn " + std::to_string(channels) +
                                "-channel images into " + std::to_string(out_channels) +
                                "-channel ones (only equal, 1 -> 3 and 3 -> 1 are supported)");
  }
}

// BT.601 luma in 16-bit fixed point, rounded, as OpenCV's RGB2GRAY computes it.
std::uint8_t luma(std::uint8_t r, std::uint8_t g, std::uint8_t b) {
  return static_cast<std::uint8_t>((r * 19595u + g * 38470u + b * 7471u + 32768u) >> 16);
}

// Copies the h x w window at (top, left) of an interleaved image into `channels` CHW planes,
// mirroring each row when `flip`.
void deinterleave(const std::uint8_t* src, std::size_t stride, int channels, int top, int left,
                  int h, int w, bool flip, std::uint8_t* dst) {
  const std::size_t plane = static_cast<std::size_t>(h) * static_cast<std::size_t>(w);
  const std::size_t c = static_cast<std::size_t>(channels);
  for (int y = 0; y < h; ++y) {
    const std::uint8_t* row =
        src + static_cast<std::size_t>(top + y) * stride + static_cast<std::size_t>(left) * c;
    for (std::size_t k = 0; k < c; ++k) {
      std::uint8_t* out =
          dst + k * plane + static_cast<std::size_t>(y) * static_cast<std::size_t>(w);
      for (int x = 0; x < w; ++x) {
        const int sx = flip ? w - 1 - x : x;
        out[x] = row[static_cast<std::size_t>(sx) * c + k];
      }
    }
  }
}

// The shared core. src is interleaved with `channels` channels (1: a plain grey plane); the result
// fills that many CHW planes, and a grey image headed for 3 channels has its plane replicated.
void transform_image(const std::uint8_t* src, int height, int width, int channels,
                     std::size_t row_stride, const Transform& t, std::mt19937& rng,
                     std::uint8_t* dst) {
  const int oh = t.out.height;
  const int ow = t.out.width;
  const std::size_t out_plane = static_cast<std::size_t>(oh) * static_cast<std::size_t>(ow);
  const std::size_t out_row = static_cast<std::size_t>(ow) * static_cast<std::size_t>(channels);
  thread_local std::vector<std::uint8_t> resized_buffer;
  if (t.train) {
    const TrainCrop crop = plan_train_crop(height, width, t, rng);
    const std::uint8_t* corner =
        src + static_cast<std::size_t>(crop.top) * row_stride +
        static_cast<std::size_t>(crop.left) * static_cast<std::size_t>(channels);
    std::uint8_t* resized = scratch(resized_buffer, out_row * static_cast<std::size_t>(oh));
    resize_u8(corner, crop.height, crop.width, row_stride, channels, resized, oh, ow, out_row);
    deinterleave(resized, out_row, channels, 0, 0, oh, ow, crop.flip, dst);
  } else {
    const EvalResize r = plan_eval_resize(height, width, t);
    const std::size_t resized_row =
        static_cast<std::size_t>(r.resized_width) * static_cast<std::size_t>(channels);
    std::uint8_t* resized =
        scratch(resized_buffer, resized_row * static_cast<std::size_t>(r.resized_height));
    resize_u8(src, height, width, row_stride, channels, resized, r.resized_height, r.resized_width,
              resized_row);
    deinterleave(resized, resized_row, channels, r.top, r.left, oh, ow, false, dst);
  }
  for (int k = channels; k < t.out.channels; ++k) {
    std::memcpy(dst + static_cast<std::size_t>(k) * out_plane, dst, out_plane);
  }
}

}  // namespace

bool channels_convertible(int channels, int out_channels) {
  return (channels == out_channels && channels > 0) || (channels == 1 && out_channels == 3) ||
         (channels == 3 && out_channels == 1);
}

void transform_planar(const std::uint8_t* src, ImageShape native, const Transform& t,
                      std::mt19937& rng, std::uint8_t* dst) {
  require_convertible(native.channels, t.out.channels);
  const std::size_t plane =
      static_cast<std::size_t>(native.height) * static_cast<std::size_t>(native.width);
  const std::size_t width = static_cast<std::size_t>(native.width);
  if (native.channels == 1) {
    transform_image(src, native.height, native.width, 1, width, t, rng, dst);
    return;
  }
  // Several planes: interleave them once (cheap at CIFAR's 32x32), so resizing and the random crop
  // happen in one pass shared by all channels, exactly as for a decoded image.
  thread_local std::vector<std::uint8_t> hwc_buffer;
  const int out_c = t.out.channels == 1 ? 1 : native.channels;
  std::uint8_t* hwc = scratch(hwc_buffer, plane * static_cast<std::size_t>(out_c));
  for (std::size_t i = 0; i < plane; ++i) {
    if (out_c == 1) {
      hwc[i] = luma(src[i], src[plane + i], src[2 * plane + i]);
    } else {
      for (std::size_t k = 0; k < static_cast<std::size_t>(out_c); ++k) {
        hwc[i * static_cast<std::size_t>(out_c) + k] = src[k * plane + i];
      }
    }
  }
  transform_image(hwc, native.height, native.width, out_c, width * static_cast<std::size_t>(out_c),
                  t, rng, dst);
}

void transform_interleaved(const std::uint8_t* src, int height, int width, int channels,
                           std::size_t row_stride, const Transform& t, std::mt19937& rng,
                           std::uint8_t* dst) {
  require_convertible(channels, t.out.channels);
  if (channels == 3 && t.out.channels == 1) {
    thread_local std::vector<std::uint8_t> grey_buffer;
    const std::size_t w = static_cast<std::size_t>(width);
    std::uint8_t* grey = scratch(grey_buffer, w * static_cast<std::size_t>(height));
    for (int y = 0; y < height; ++y) {
      const std::uint8_t* row = src + static_cast<std::size_t>(y) * row_stride;
      for (std::size_t x = 0; x < w; ++x) {
        grey[static_cast<std::size_t>(y) * w + x] =
            luma(row[3 * x], row[3 * x + 1], row[3 * x + 2]);
      }
    }
    transform_image(grey, height, width, 1, w, t, rng, dst);
    return;
  }
  transform_image(src, height, width, channels, row_stride, t, rng, dst);
}

}  // namespace dl::data
