// JPEG files the data tests need and OpenCV cannot write: progressive (with any scan script) and
// CMYK, written with libjpeg itself. Only where the build has libjpeg (DL_HAVE_LIBJPEG).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <vector>

#include "support/files.h"

namespace dl::test {

struct JpegSpec {
  int width = 8;
  int height = 8;
  int components = 3;  // 1 grey, 3 RGB, 4 CMYK (Adobe's inverted convention, as Photoshop writes)
  bool progressive = false;
  // A custom progressive scan script: {component, Ss, Se, Ah, Al} per scan, one component each
  // (empty: libjpeg's standard progression when `progressive`).
  std::vector<std::array<int, 5>> scans;
  int quality = 95;
  // The luma component's sampling factors for colour (2x2 is 4:2:0, 2x1 4:2:2, 1x1 4:4:4).
  int luma_h = 2;
  int luma_v = 2;
  int restart_interval = 0;  // MCUs between restart markers (0: none)
  bool optimize = false;     // Huffman tables fitted to the image instead of the standard ones
};

// Sample value of component c at (x, y).
using JpegPixel = std::function<std::uint8_t(int x, int y, int c)>;

// The encoded file; throws std::runtime_error when libjpeg refuses (a bad scan script).
Bytes write_jpeg(const JpegSpec& spec, const JpegPixel& pixel);

}  // namespace dl::test
