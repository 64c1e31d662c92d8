// Image resizing with or without OpenCV (see resize.h).
#include "data/resize.h"

#include "data/resample.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#if DL_HAVE_OPENCV
#include <opencv2/imgproc.hpp>
#endif

namespace dl::data {
namespace {

void copy_rows(const std::uint8_t* src, std::size_t src_stride, std::uint8_t* dst,
               std::size_t dst_stride, int rows, std::size_t row_bytes) {
  for (int y = 0; y < rows; ++y) {
    std::memcpy(dst + static_cast<std::size_t>(y) * dst_stride,
                src + static_cast<std::size_t>(y) * src_stride, row_bytes);
  }
}

// For one output coordinate: the two source neighbours and the weight of the second.
struct Tap {
  int i0 = 0;
  int i1 = 0;
  float w1 = 0.0f;
};

std::vector<Tap> taps(int src_size, int dst_size) {
  std::vector<Tap> result(static_cast<std::size_t>(dst_size));
  const double scale = static_cast<double>(src_size) / dst_size;
  for (int d = 0; d < dst_size; ++d) {
    double s = (d + 0.5) * scale - 0.5;  // half-pixel centers
    s = std::clamp(s, 0.0, static_cast<double>(src_size - 1));
    Tap& tap = result[static_cast<std::size_t>(d)];
    tap.i0 = static_cast<int>(s);
    tap.i1 = std::min(tap.i0 + 1, src_size - 1);
    tap.w1 = static_cast<float>(s - tap.i0);
  }
  return result;
}

}  // namespace

void resize_bilinear_u8(const std::uint8_t* src, int src_height, int src_width,
                        std::size_t src_stride, int channels, std::uint8_t* dst, int dst_height,
                        int dst_width, std::size_t dst_stride) {
  const std::vector<Tap> xs = taps(src_width, dst_width);
  const std::vector<Tap> ys = taps(src_height, dst_height);
  const std::size_t c = static_cast<std::size_t>(channels);
  for (int y = 0; y < dst_height; ++y) {
    const Tap& ty = ys[static_cast<std::size_t>(y)];
    const std::uint8_t* row0 = src + static_cast<std::size_t>(ty.i0) * src_stride;
    const std::uint8_t* row1 = src + static_cast<std::size_t>(ty.i1) * src_stride;
    std::uint8_t* out = dst + static_cast<std::size_t>(y) * dst_stride;
    for (int x = 0; x < dst_width; ++x) {
      const Tap& tx = xs[static_cast<std::size_t>(x)];
      const std::size_t a = static_cast<std::size_t>(tx.i0) * c;
      const std::size_t b = static_cast<std::size_t>(tx.i1) * c;
      for (std::size_t k = 0; k < c; ++k) {
        const float top = row0[a + k] + tx.w1 * static_cast<float>(row0[b + k] - row0[a + k]);
        const float bottom = row1[a + k] + tx.w1 * static_cast<float>(row1[b + k] - row1[a + k]);
        const float v = top + ty.w1 * (bottom - top);
        out[static_cast<std::size_t>(x) * c + k] = static_cast<std::uint8_t>(v + 0.5f);
      }
    }
  }
}

void resize_u8(const std::uint8_t* src, int src_height, int src_width, std::size_t src_stride,
               int channels, std::uint8_t* dst, int dst_height, int dst_width,
               std::size_t dst_stride) {
  if (src_height == dst_height && src_width == dst_width) {
    copy_rows(src, src_stride, dst, dst_stride, src_height,
              static_cast<std::size_t>(src_width) * static_cast<std::size_t>(channels));
    return;
  }
  // Shrinking along either axis: torchvision's (Pillow's) antialiased filter, so that a crop
  // shrunk to 224 is the image torchvision's RandomResizedCrop would give.
  if (dst_height < src_height || dst_width < src_width) {
    resample_antialias_u8(src, src_height, src_width, src_stride, channels, dst, dst_height,
                          dst_width, dst_stride);
    return;
  }
#if DL_HAVE_OPENCV
  // Growing: OpenCV's bilinear, Pillow's up to rounding (a level), written straight into dst.
  const cv::Mat in(src_height, src_width, CV_8UC(channels), const_cast<std::uint8_t*>(src),
                   src_stride);
  cv::Mat out(dst_height, dst_width, CV_8UC(channels), dst, dst_stride);
  cv::resize(in, out, out.size(), 0, 0, cv::INTER_LINEAR);
#else
  resize_bilinear_u8(src, src_height, src_width, src_stride, channels, dst, dst_height, dst_width,
                     dst_stride);
#endif
}

void set_resize_threads(int threads) {
#if DL_HAVE_OPENCV
  cv::setNumThreads(threads);
#else
  (void)threads;
#endif
}

}  // namespace dl::data
