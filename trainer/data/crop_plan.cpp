// RandomResizedCrop and Resize + CenterCrop geometry, following torchvision 0.14 (see crop_plan.h).
#include "data/crop_plan.h"

#include <algorithm>
#include <cmath>

#include "data/random.h"

namespace dl::data {
namespace {

// Python's round(): halves go to the even neighbour (the default floating-point rounding mode),
// where std::lround would round them away from zero.
int py_round(double x) {
  return static_cast<int>(std::nearbyint(x));
}

// timm's floor(img_size / crop_pct) and torchvision's int() truncation of the longer side; the
// epsilon keeps 255.99999999 (a float artefact of an exact 256) from dropping a pixel.
int py_floor(double x) {
  return static_cast<int>(std::floor(x + 1e-6));
}

}  // namespace

TrainCrop plan_train_crop(int height, int width, const Transform& t, std::mt19937& rng) {
  TrainCrop crop;
  const double area = static_cast<double>(height) * static_cast<double>(width);
  const double log_ratio_min = std::log(static_cast<double>(t.ratio_min));
  const double log_ratio_max = std::log(static_cast<double>(t.ratio_max));
  bool found = false;
  for (int attempt = 0; attempt < 10 && !found; ++attempt) {
    const double target_area = area * uniform_real(rng, t.scale_min, t.scale_max);
    const double aspect = std::exp(uniform_real(rng, log_ratio_min, log_ratio_max));
    const int w = py_round(std::sqrt(target_area * aspect));
    const int h = py_round(std::sqrt(target_area / aspect));
    if (w > 0 && w <= width && h > 0 && h <= height) {
      crop.top = uniform_int(rng, 0, height - h);
      crop.left = uniform_int(rng, 0, width - w);
      crop.height = h;
      crop.width = w;
      found = true;
    }
  }
  if (!found) {
    // The fallback: the largest centered crop whose aspect ratio lies within the range.
    const double in_ratio = static_cast<double>(width) / static_cast<double>(height);
    int w = width;
    int h = height;
    if (in_ratio < t.ratio_min) {
      h = py_round(w / static_cast<double>(t.ratio_min));
    } else if (in_ratio > t.ratio_max) {
      w = py_round(h * static_cast<double>(t.ratio_max));
    }
    crop.height = std::clamp(h, 1, height);
    crop.width = std::clamp(w, 1, width);
    crop.top = (height - crop.height) / 2;
    crop.left = (width - crop.width) / 2;
  }
  // Drawn even when the probability is 0 or 1, so changing it never shifts later draws.
  crop.flip = uniform01(rng) < static_cast<double>(t.flip_probability);
  return crop;
}

EvalResize plan_eval_resize(int height, int width, const Transform& t) {
  const double fraction = t.eval_crop_fraction > 0.0f ? t.eval_crop_fraction : 1.0;
  // One scale for both directions keeps the aspect ratio; the larger of the two requirements wins,
  // which for a square output is "shorter side to out / fraction", torchvision's Resize(int).
  const double scale = std::max(t.out.height / fraction / height, t.out.width / fraction / width);
  EvalResize r;
  r.resized_height = std::max(t.out.height, py_floor(height * scale));
  r.resized_width = std::max(t.out.width, py_floor(width * scale));
  // torchvision's CenterCrop: int(round((h - crop) / 2.0)).
  r.top = py_round((r.resized_height - t.out.height) / 2.0);
  r.left = py_round((r.resized_width - t.out.width) / 2.0);
  return r;
}

}  // namespace dl::data
