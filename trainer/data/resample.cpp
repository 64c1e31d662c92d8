// Pillow's 8-bit resampling with the bilinear filter (see resample.h). The coefficients follow
// Pillow's precompute_coeffs and normalize_coeffs_8bpc (libImaging/Resample.c) step for step, so
// that the output bytes are Pillow's.
#include "data/resample.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace dl::data {
namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;

// For each output coordinate: the first source pixel, how many follow, and their fixed-point
// weights (`ksize` slots each).
struct Coefficients {
  int ksize = 0;
  std::vector<int> first;
  std::vector<int> count;
  std::vector<std::int32_t> weights;
};

double triangle(double x) {
  x = std::fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

// Pillow's precompute_coeffs for the box [in0, in1) of a source `in_size` pixels long (the whole
// of it unless a box is given): taps stay inside the source.
Coefficients coefficients(int in_size, int out_size, double in0, double in1) {
  const double scale = (in1 - in0) / out_size;
  const double filterscale = std::max(scale, 1.0);
  const double support = 1.0 * filterscale;  // the bilinear filter's support is 1
  Coefficients c;
  c.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  c.first.resize(static_cast<std::size_t>(out_size));
  c.count.resize(static_cast<std::size_t>(out_size));
  c.weights.assign(static_cast<std::size_t>(out_size) * static_cast<std::size_t>(c.ksize), 0);
  std::vector<double> k(static_cast<std::size_t>(c.ksize));
  for (int xx = 0; xx < out_size; ++xx) {
    const double center = in0 + (xx + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    const int xmin = std::max(static_cast<int>(center - support + 0.5), 0);
    const int xmax = std::min(static_cast<int>(center + support + 0.5), in_size) - xmin;
    double ww = 0.0;
    for (int x = 0; x < xmax; ++x) {
      k[static_cast<std::size_t>(x)] = triangle((x + xmin - center + 0.5) * ss);
      ww += k[static_cast<std::size_t>(x)];
    }
    std::int32_t* w = &c.weights[static_cast<std::size_t>(xx) * static_cast<std::size_t>(c.ksize)];
    for (int x = 0; x < xmax; ++x) {
      const double v =
          ww != 0.0 ? k[static_cast<std::size_t>(x)] / ww : k[static_cast<std::size_t>(x)];
      w[x] = static_cast<std::int32_t>(v < 0 ? -0.5 + v * (1 << kPrecisionBits)
                                             : 0.5 + v * (1 << kPrecisionBits));
    }
    c.first[static_cast<std::size_t>(xx)] = xmin;
    c.count[static_cast<std::size_t>(xx)] = xmax;
  }
  return c;
}

Coefficients coefficients(int in_size, int out_size) {
  return coefficients(in_size, out_size, 0.0, in_size);
}

// Pillow's accumulators are 32-bit: 255 times weights summing to 2^22 stays below 2^31.
std::uint8_t clip8(std::int32_t v) {
  if (v >= (std::int32_t{1} << kPrecisionBits << 8)) return 255;
  if (v <= 0) return 0;
  return static_cast<std::uint8_t>(v >> kPrecisionBits);
}

constexpr std::int32_t kHalf = std::int32_t{1} << (kPrecisionBits - 1);

// Rows [row0, row0 + rows) of src, filtered along x into `rows` rows of dst.
void horizontal(const std::uint8_t* src, std::size_t src_stride, int row0, int rows, int channels,
                const Coefficients& c, int out_width, std::uint8_t* dst, std::size_t dst_stride) {
  const std::size_t ch = static_cast<std::size_t>(channels);
  for (int y = 0; y < rows; ++y) {
    const std::uint8_t* in = src + static_cast<std::size_t>(row0 + y) * src_stride;
    std::uint8_t* out = dst + static_cast<std::size_t>(y) * dst_stride;
    for (int xx = 0; xx < out_width; ++xx) {
      const std::int32_t* w =
          &c.weights[static_cast<std::size_t>(xx) * static_cast<std::size_t>(c.ksize)];
      const std::uint8_t* p =
          in + static_cast<std::size_t>(c.first[static_cast<std::size_t>(xx)]) * ch;
      const int n = c.count[static_cast<std::size_t>(xx)];
      std::uint8_t* o = out + static_cast<std::size_t>(xx) * ch;
      if (ch == 3) {  // RGB, the common case: the three sums in one pass over the taps
        std::int32_t r = kHalf, g = kHalf, b = kHalf;
        for (int x = 0; x < n; ++x, p += 3) {
          r += p[0] * w[x];
          g += p[1] * w[x];
          b += p[2] * w[x];
        }
        o[0] = clip8(r);
        o[1] = clip8(g);
        o[2] = clip8(b);
        continue;
      }
      for (std::size_t k = 0; k < ch; ++k) {
        std::int32_t ss = kHalf;
        for (int x = 0; x < n; ++x) ss += p[static_cast<std::size_t>(x) * ch + k] * w[x];
        o[k] = clip8(ss);
      }
    }
  }
}

// src's rows filtered along y; `row0` is the source row that coefficient row 0 counts from. Taps
// outside, bytes inside: each tap adds one source row to a row of sums (vectorised).
void vertical(const std::uint8_t* src, std::size_t src_stride, int row0, int width, int channels,
              const Coefficients& c, int out_height, std::uint8_t* dst, std::size_t dst_stride) {
  const std::size_t row_bytes =
      static_cast<std::size_t>(width) * static_cast<std::size_t>(channels);
  std::vector<std::int32_t> sums(row_bytes);
  for (int yy = 0; yy < out_height; ++yy) {
    const std::int32_t* w =
        &c.weights[static_cast<std::size_t>(yy) * static_cast<std::size_t>(c.ksize)];
    const int first = c.first[static_cast<std::size_t>(yy)] - row0;
    const int n = c.count[static_cast<std::size_t>(yy)];
    std::fill(sums.begin(), sums.end(), kHalf);
    for (int y = 0; y < n; ++y) {
      const std::uint8_t* row = src + static_cast<std::size_t>(first + y) * src_stride;
      const std::int32_t wy = w[y];
      for (std::size_t i = 0; i < row_bytes; ++i) sums[i] += row[i] * wy;
    }
    std::uint8_t* out = dst + static_cast<std::size_t>(yy) * dst_stride;
    for (std::size_t i = 0; i < row_bytes; ++i) out[i] = clip8(sums[i]);
  }
}

// As Pillow: the horizontal pass over the source rows the vertical pass reads, into a temporary
// image, then the vertical pass.
void two_passes(const std::uint8_t* src, std::size_t src_stride, int channels,
                const Coefficients& cx, const Coefficients& cy, std::uint8_t* dst, int dst_height,
                int dst_width, std::size_t dst_stride) {
  const int first = cy.first.front();
  const int last = cy.first.back() + cy.count.back();
  const std::size_t temp_stride =
      static_cast<std::size_t>(dst_width) * static_cast<std::size_t>(channels);
  thread_local std::vector<std::uint8_t> temp;
  const std::size_t bytes = static_cast<std::size_t>(last - first) * temp_stride;
  if (temp.size() < bytes) temp.resize(bytes);
  horizontal(src, src_stride, first, last - first, channels, cx, dst_width, temp.data(),
             temp_stride);
  vertical(temp.data(), temp_stride, first, dst_width, channels, cy, dst_height, dst, dst_stride);
}

}  // namespace

void resample_antialias_u8(const std::uint8_t* src, int src_height, int src_width,
                           std::size_t src_stride, int channels, std::uint8_t* dst, int dst_height,
                           int dst_width, std::size_t dst_stride) {
  const bool along_x = dst_width != src_width;
  const bool along_y = dst_height != src_height;
  const std::size_t ch = static_cast<std::size_t>(channels);
  if (!along_x && !along_y) {
    for (int y = 0; y < src_height; ++y) {
      std::memcpy(dst + static_cast<std::size_t>(y) * dst_stride,
                  src + static_cast<std::size_t>(y) * src_stride,
                  static_cast<std::size_t>(src_width) * ch);
    }
    return;
  }
  const Coefficients cy = coefficients(src_height, dst_height);
  if (!along_x) {
    vertical(src, src_stride, 0, src_width, channels, cy, dst_height, dst, dst_stride);
    return;
  }
  const Coefficients cx = coefficients(src_width, dst_width);
  if (!along_y) {
    horizontal(src, src_stride, 0, src_height, channels, cx, dst_width, dst, dst_stride);
    return;
  }
  two_passes(src, src_stride, channels, cx, cy, dst, dst_height, dst_width, dst_stride);
}

void resample_box_u8(const std::uint8_t* src, int src_height, int src_width, std::size_t src_stride,
                     int channels, const Box& box, std::uint8_t* dst, int dst_height, int dst_width,
                     std::size_t dst_stride) {
  const Coefficients cx = coefficients(src_width, dst_width, box.left, box.right);
  const Coefficients cy = coefficients(src_height, dst_height, box.top, box.bottom);
  two_passes(src, src_stride, channels, cx, cy, dst, dst_height, dst_width, dst_stride);
}

}  // namespace dl::data
