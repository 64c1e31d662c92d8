// HWC -> CHW (see planes.h). The plain loop reads each row once per channel with a stride the
// compiler cannot vectorise well; it cost 16% of loading a 256x256 JPEG (callgrind, NOTES.md),
// which OpenCV's deinterleaving loads bring down to a few percent.
#include "data/planes.h"

#if DL_HAVE_OPENCV
#include <opencv2/core.hpp>
#endif

namespace dl::data {

void to_planes_plain(const std::uint8_t* src, std::size_t stride, int channels, int top, int left,
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

void to_planes(const std::uint8_t* src, std::size_t stride, int channels, int top, int left, int h,
               int w, bool flip, std::uint8_t* dst) {
#if DL_HAVE_OPENCV
  if (channels >= 1 && channels <= 4) {
    const int type = CV_MAKETYPE(CV_8U, channels);
    cv::Mat window(h, w, type,
                   const_cast<std::uint8_t*>(src) + static_cast<std::size_t>(top) * stride +
                       static_cast<std::size_t>(left) * static_cast<std::size_t>(channels),
                   stride);
    const std::size_t plane = static_cast<std::size_t>(h) * static_cast<std::size_t>(w);
    if (channels == 1) {
      cv::Mat out(h, w, CV_8UC1, dst);
      if (flip) {
        cv::flip(window, out, 1);
      } else {
        window.copyTo(out);
      }
      return;
    }
    thread_local cv::Mat mirrored;
    if (flip) cv::flip(window, mirrored, 1);
    cv::Mat planes[4];
    for (int k = 0; k < channels; ++k) {
      planes[k] = cv::Mat(h, w, CV_8UC1, dst + static_cast<std::size_t>(k) * plane);
    }
    cv::split(flip ? mirrored : window, planes);
    return;
  }
#endif
  to_planes_plain(src, stride, channels, top, left, h, w, flip, dst);
}

}  // namespace dl::data
