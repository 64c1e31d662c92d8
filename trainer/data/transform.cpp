// Pixel work of the transforms (see transform.h). Scratch buffers are thread_local: each loader
// worker reuses its own, so steady-state loading allocates nothing.
#include "data/transform.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "data/crop_plan.h"
#include "data/planes.h"
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

// Copies plane 0 into the planes a grey image lacks (1 -> 3 channels).
void replicate_grey(int channels, const Transform& t, std::uint8_t* dst) {
  const std::size_t plane =
      static_cast<std::size_t>(t.out.height) * static_cast<std::size_t>(t.out.width);
  for (int k = channels; k < t.out.channels; ++k) {
    std::memcpy(dst + static_cast<std::size_t>(k) * plane, dst, plane);
  }
}

// Resizes the crop at `corner` (crop_h x crop_w of an interleaved image with `channels` channels)
// to the output size and writes it as planes, mirrored when `flip`; a grey image headed for 3
// channels has its plane replicated.
void resize_to_planes(const std::uint8_t* corner, int crop_h, int crop_w, std::size_t row_stride,
                      int channels, bool flip, const Transform& t, std::uint8_t* dst) {
  const int oh = t.out.height;
  const int ow = t.out.width;
  const std::size_t out_row = static_cast<std::size_t>(ow) * static_cast<std::size_t>(channels);
  thread_local std::vector<std::uint8_t> resized_buffer;
  std::uint8_t* resized = scratch(resized_buffer, out_row * static_cast<std::size_t>(oh));
  resize_u8(corner, crop_h, crop_w, row_stride, channels, resized, oh, ow, out_row);
  to_planes(resized, out_row, channels, 0, 0, oh, ow, flip, dst);
  replicate_grey(channels, t, dst);
}

// The shared core. src is interleaved with `channels` channels (1: a plain grey plane); the result
// fills that many CHW planes, and a grey image headed for 3 channels has its plane replicated.
void transform_image(const std::uint8_t* src, int height, int width, int channels,
                     std::size_t row_stride, const Transform& t, std::mt19937& rng,
                     std::uint8_t* dst) {
  if (t.train) {
    const TrainCrop crop = plan_train_crop(height, width, t, rng);
    const std::uint8_t* corner =
        src + static_cast<std::size_t>(crop.top) * row_stride +
        static_cast<std::size_t>(crop.left) * static_cast<std::size_t>(channels);
    resize_to_planes(corner, crop.height, crop.width, row_stride, channels, crop.flip, t, dst);
    return;
  }
  const EvalResize r = plan_eval_resize(height, width, t);
  const std::size_t resized_row =
      static_cast<std::size_t>(r.resized_width) * static_cast<std::size_t>(channels);
  thread_local std::vector<std::uint8_t> resized_buffer;
  std::uint8_t* resized =
      scratch(resized_buffer, resized_row * static_cast<std::size_t>(r.resized_height));
  resize_u8(src, height, width, row_stride, channels, resized, r.resized_height, r.resized_width,
            resized_row);
  to_planes(resized, resized_row, channels, r.top, r.left, t.out.height, t.out.width, false, dst);
  replicate_grey(channels, t, dst);
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

void transform_planned_crop(const std::uint8_t* corner, std::size_t row_stride, int channels,
                            const TrainCrop& crop, const Transform& t, std::uint8_t* dst) {
  if (channels != t.out.channels && !(channels == 1 && t.out.channels == 3)) {
    throw std::invalid_argument("transform_planned_crop: cannot turn " + std::to_string(channels) +
                                "-channel pixels into " + std::to_string(t.out.channels) +
                                " channels");
  }
  resize_to_planes(corner, crop.height, crop.width, row_stride, channels, crop.flip, t, dst);
}

namespace {

void require_scaled_channels(int channels, const Transform& t) {
  if (channels != t.out.channels && !(channels == 1 && t.out.channels == 3)) {
    throw std::invalid_argument("a scaled window of " + std::to_string(channels) +
                                "-channel pixels cannot become " + std::to_string(t.out.channels) +
                                " channels");
  }
}

}  // namespace

void transform_scaled_crop(const ScaledWindow& w, bool flip, const Transform& t,
                           std::uint8_t* dst) {
  require_scaled_channels(w.channels, t);
  const int oh = t.out.height;
  const int ow = t.out.width;
  const std::size_t out_row = static_cast<std::size_t>(ow) * static_cast<std::size_t>(w.channels);
  thread_local std::vector<std::uint8_t> resized_buffer;
  std::uint8_t* resized = scratch(resized_buffer, out_row * static_cast<std::size_t>(oh));
  resample_box_u8(w.pixels, w.rows, w.cols, w.row_stride, w.channels, w.box, resized, oh, ow,
                  out_row);
  to_planes(resized, out_row, w.channels, 0, 0, oh, ow, flip, dst);
  replicate_grey(w.channels, t, dst);
}

void transform_scaled_eval(const ScaledWindow& w, int image_height, int image_width,
                           const Transform& t, std::uint8_t* dst) {
  require_scaled_channels(w.channels, t);
  const EvalResize r = plan_eval_resize(image_height, image_width, t);
  const std::size_t resized_row =
      static_cast<std::size_t>(r.resized_width) * static_cast<std::size_t>(w.channels);
  thread_local std::vector<std::uint8_t> resized_buffer;
  std::uint8_t* resized =
      scratch(resized_buffer, resized_row * static_cast<std::size_t>(r.resized_height));
  resample_box_u8(w.pixels, w.rows, w.cols, w.row_stride, w.channels, w.box, resized,
                  r.resized_height, r.resized_width, resized_row);
  to_planes(resized, resized_row, w.channels, r.top, r.left, t.out.height, t.out.width, false, dst);
  replicate_grey(w.channels, t, dst);
}

}  // namespace dl::data
