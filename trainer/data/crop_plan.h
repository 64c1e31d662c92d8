// The geometry of the two transforms, as pure functions of the image size (and the random stream):
// where RandomResizedCrop cuts, whether it flips, and how the evaluation resize + center crop
// lands. Kept apart from the pixel work so the algorithms can be checked against torchvision's
// numbers.
#pragma once

#include <random>

#include "data/sample_source.h"

namespace dl::data {

// A rectangle of the source image (rows top..top+height, columns left..left+width) that is resized
// to the output size, then mirrored left-right when `flip`.
struct TrainCrop {
  int top = 0;
  int left = 0;
  int height = 0;
  int width = 0;
  bool flip = false;
};

// torchvision's RandomResizedCrop.get_params (10 attempts at a random area and log-uniform aspect
// ratio, then a center crop clamped to the ratio range), followed by the flip draw. Consumes `rng`
// in a fixed way, so the same stream gives the same crop.
TrainCrop plan_train_crop(int height, int width, const Transform& t, std::mt19937& rng);

// Evaluation: the whole image is resized to resized_height x resized_width (the smallest size that
// holds out / eval_crop_fraction in both directions, so 256 for a 224 crop of a square), then the
// out-sized window at (top, left) is kept, as torchvision's Resize + CenterCrop do.
struct EvalResize {
  int resized_height = 0;
  int resized_width = 0;
  int top = 0;
  int left = 0;
};

EvalResize plan_eval_resize(int height, int width, const Transform& t);

}  // namespace dl::data
