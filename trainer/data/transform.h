// The pixel side of a Transform: crop, resize, flip and channel conversion of one image, written
// straight into its CHW slot of the batch buffer. Every source goes through these two functions, so
// IDX, CIFAR and decoded files augment identically for the same random stream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>

#include "data/crop_plan.h"
#include "data/resample.h"
#include "data/sample_source.h"

namespace dl::data {

// Whether images of `channels` channels can become t.out.channels ones: equal, 1 -> 3 (grey
// replicated) or 3 -> 1 (luma, ITU-R BT.601 weights as OpenCV's and PIL's "L" conversion).
bool channels_convertible(int channels, int out_channels);

// src: `native.channels` planes of native.height x native.width, back to back (CHW, as IDX and
// CIFAR store them). train: RandomResizedCrop + flip; eval: resize + center crop (crop_plan.h).
// Throws std::invalid_argument when the channel counts cannot be converted.
void transform_planar(const std::uint8_t* src, ImageShape native, const Transform& t,
                      std::mt19937& rng, std::uint8_t* dst);

// src: an interleaved image (HWC, RGB order for 3 channels, rows row_stride bytes apart), as a
// decoder produces it. Same transforms and same use of `rng` as transform_planar.
void transform_interleaved(const std::uint8_t* src, int height, int width, int channels,
                           std::size_t row_stride, const Transform& t, std::mt19937& rng,
                           std::uint8_t* dst);

// The train transform after its crop was planned on the full image (plan_train_crop), for a
// decoder that produced only that crop: `corner` is the crop's top-left pixel, interleaved with
// `channels` channels (t.out.channels, or 1 for a grey image headed for 3), rows row_stride bytes
// apart. Gives the same bytes as transform_interleaved on the full image with the same stream.
void transform_planned_crop(const std::uint8_t* corner, std::size_t row_stride, int channels,
                            const TrainCrop& crop, const Transform& t, std::uint8_t* dst);

// A window decoded at a reduced scale (jpeg_region.h): `pixels` is the top-left of a rows x cols
// block, interleaved with `channels` channels (t.out.channels, or 1 for a grey image headed for
// 3), rows row_stride bytes apart, and `box` the window's place in it, fractional.
struct ScaledWindow {
  const std::uint8_t* pixels = nullptr;
  std::size_t row_stride = 0;
  int channels = 0;
  int rows = 0;
  int cols = 0;
  Box box;
};

// The train transform of a crop planned on the full image and decoded at a reduced scale: the box
// resized to the output (Pillow's filter on the box's own coordinates), mirrored when `flip`.
void transform_scaled_crop(const ScaledWindow& window, bool flip, const Transform& t,
                           std::uint8_t* dst);

// The evaluation transform of a whole image (image_height x image_width at full size) decoded at
// a reduced scale: the box resized to plan_eval_resize's size, then its centre crop.
void transform_scaled_eval(const ScaledWindow& window, int image_height, int image_width,
                           const Transform& t, std::uint8_t* dst);

}  // namespace dl::data
