// Image sizes read from headers alone: each format the loader decodes, as OpenCV writes it, gives
// the size OpenCV decodes; cut-short and junk headers give no size and never read out of bounds.
#include "data/image_header.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#if DL_HAVE_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#endif

namespace dl::test {
namespace {

using namespace dl::data;

ImageHeader header_of(const std::vector<std::uint8_t>& bytes) {
  return read_image_header(bytes.data(), bytes.size());
}

#if DL_HAVE_OPENCV

struct Encoded {
  std::string ext;
  ImageFormat format;
  int type;
};

TEST(ImageHeader, SizesOfEveryFormatMatchTheDecoder) {
  const std::vector<Encoded> kinds = {
      {".jpg", ImageFormat::kJpeg, CV_8UC3},  {".png", ImageFormat::kPng, CV_8UC3},
      {".png", ImageFormat::kPng, CV_16UC1},  {".bmp", ImageFormat::kBmp, CV_8UC3},
      {".webp", ImageFormat::kWebp, CV_8UC3}, {".tiff", ImageFormat::kTiff, CV_8UC3},
      {".ppm", ImageFormat::kPnm, CV_8UC3},   {".pgm", ImageFormat::kPnm, CV_8UC1}};
  for (const Encoded& kind : kinds) {
    for (const auto& [rows, cols] : {std::pair{1, 1}, std::pair{37, 301}, std::pair{300, 2}}) {
      std::vector<std::uint8_t> bytes;
      if (!cv::imencode(kind.ext, cv::Mat(rows, cols, kind.type, cv::Scalar::all(7)), bytes)) {
        ADD_FAILURE() << "OpenCV cannot write " << kind.ext;
        continue;
      }
      const ImageHeader h = header_of(bytes);
      EXPECT_EQ(h.format, kind.format) << kind.ext;
      EXPECT_EQ(h.width, cols) << kind.ext;
      EXPECT_EQ(h.height, rows) << kind.ext;
      // The decoder agrees.
      const cv::Mat decoded = cv::imdecode(bytes, cv::IMREAD_UNCHANGED);
      EXPECT_EQ(decoded.cols, cols) << kind.ext;
      EXPECT_EQ(decoded.rows, rows) << kind.ext;
      // Every prefix: the same answer or no size, and no read past the end (the copy is exact).
      for (std::size_t n = 0; n < bytes.size() && n < 400; ++n) {
        const std::vector<std::uint8_t> prefix(bytes.begin(), bytes.begin() + n);
        const ImageHeader p = header_of(prefix);
        if (p.sized()) {
          EXPECT_EQ(p.width, cols) << kind.ext << " prefix " << n;
          EXPECT_EQ(p.height, rows) << kind.ext << " prefix " << n;
        }
      }
    }
  }
}

#endif

TEST(ImageHeader, BmpStoredTopDownHasAPositiveHeight) {
  std::vector<std::uint8_t> bmp(54, 0);
  bmp[0] = 'B';
  bmp[1] = 'M';
  bmp[14] = 40;
  bmp[18] = 5;     // width 5
  bmp[22] = 0xFD;  // height -3: rows top-down
  bmp[23] = bmp[24] = bmp[25] = 0xFF;
  const ImageHeader h = header_of(bmp);
  EXPECT_EQ(h.format, ImageFormat::kBmp);
  EXPECT_EQ(h.width, 5);
  EXPECT_EQ(h.height, 3);
}

TEST(ImageHeader, JpegSizeComesFromTheFrameAfterOtherSegments) {
  // SOI, an APP0 segment, stray bytes and fill bytes (libjpeg skips both), then SOF2.
  std::vector<std::uint8_t> jpeg{0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x04, 0xAA, 0xBB,
                                 0x12, 0x34, 0xFF, 0xFF, 0xC2, 0x00, 0x0B, 0x08,
                                 0xEA, 0x60, 0x01, 0x02, 0x03, 0x01, 0x11, 0x00};
  const ImageHeader h = header_of(jpeg);
  EXPECT_EQ(h.format, ImageFormat::kJpeg);
  EXPECT_EQ(h.height, 60000);
  EXPECT_EQ(h.width, 258);
  // A scan before any frame, or a frame of height 0 (DNL), has no size.
  const std::vector<std::uint8_t> scan_first{0xFF, 0xD8, 0xFF, 0xDA, 0x00, 0x02};
  EXPECT_FALSE(header_of(scan_first).sized());
  std::vector<std::uint8_t> dnl = jpeg;
  dnl[16] = dnl[17] = 0;
  EXPECT_FALSE(header_of(dnl).sized());
}

TEST(ImageHeader, UnknownAndJunkDataIsNotAnImage) {
  const std::string text = "plain text";
  EXPECT_EQ(
      read_image_header(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()).format,
      ImageFormat::kUnknown);
  EXPECT_EQ(read_image_header(nullptr, 0).format, ImageFormat::kUnknown);
  // Random bytes behind each magic number: any answer, never a crash or an out-of-bounds read.
  const std::vector<std::vector<std::uint8_t>> magics = {
      {0xFF, 0xD8, 0xFF}, {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'},
      {'B', 'M'},         {'R', 'I', 'F', 'F', 0, 0, 0, 0, 'W', 'E', 'B', 'P', 'V', 'P', '8', 'X'},
      {'I', 'I', 42, 0},  {'M', 'M', 0, 42},
      {'P', '6'}};
  std::mt19937 rng(17);
  for (const auto& magic : magics) {
    for (int trial = 0; trial < 300; ++trial) {
      std::vector<std::uint8_t> bytes = magic;
      const std::size_t extra = rng() % 64;
      for (std::size_t i = 0; i < extra; ++i) bytes.push_back(static_cast<std::uint8_t>(rng()));
      const ImageHeader h = header_of(bytes);
      EXPECT_NE(h.format, ImageFormat::kUnknown);
      EXPECT_GE(h.width, 0);
      EXPECT_GE(h.height, 0);
    }
  }
}

// A TIFF may declare 2^32 - 1 by 2^32 - 1 (LONG sizes) and a PNM ten-digit sizes: the pixel count
// saturates rather than wrapping under the decoder's --max-image-pixels limit (seen while
// writing image_header_fuzz).
TEST(ImageHeader, HugeDeclaredSizesSaturateInsteadOfWrapping) {
  std::vector<std::uint8_t> tiff = {'I', 'I', 42, 0, 8, 0, 0, 0, 2, 0};
  // Tags 256 (ImageWidth) and 257 (ImageLength), each a LONG of 0xFFFFFFFF.
  for (const std::uint8_t tag : {std::uint8_t{0}, std::uint8_t{1}}) {
    const std::vector<std::uint8_t> entry = {tag, 1, 4, 0, 1, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF};
    tiff.insert(tiff.end(), entry.begin(), entry.end());
  }
  const ImageHeader t = header_of(tiff);
  EXPECT_EQ(t.format, ImageFormat::kTiff);
  EXPECT_EQ(t.width, 0xFFFFFFFFLL);
  EXPECT_EQ(t.pixels(), INT64_MAX);

  const std::string pnm = "P5\n9999999999 9999999999\n255\n";
  const ImageHeader p = header_of(std::vector<std::uint8_t>(pnm.begin(), pnm.end()));
  EXPECT_EQ(p.width, 9999999999LL);
  EXPECT_EQ(p.pixels(), INT64_MAX);
  // An IFD of 3 entries of which 2 are there: cut short, whatever the 2 say (image_header_fuzz
  // found the size changing with the bytes after them).
  std::vector<std::uint8_t> cut = tiff;
  cut[8] = 3;
  EXPECT_EQ(header_of(cut).format, ImageFormat::kTiff);
  EXPECT_FALSE(header_of(cut).sized());
  const std::string small = "P5\n3 4\n255\n";
  EXPECT_EQ(header_of(std::vector<std::uint8_t>(small.begin(), small.end())).pixels(), 12);
}

}  // namespace
}  // namespace dl::test
