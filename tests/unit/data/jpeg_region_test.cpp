// Partial JPEG decoding gives exactly the pixels a full decode gives (at odd, unaligned windows,
// colour and grey), the JPEG path of an ImageFolder source gives the same training crops as
// decoding the whole file with OpenCV, bad data is refused, and the fast HWC -> CHW split matches
// the plain loop.
#include "data/jpeg_region.h"

#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <random>
#include <utility>
#include <vector>

#include "data/file_list_source.h"
#include "data/planes.h"
#include "data/transform.h"
#include "support/build_paths.h"
#include "support/files.h"
#include "support/temp_dir.h"
#include "unit/data/fixtures.h"

#if DL_HAVE_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#endif

namespace dl::test {
namespace {

using namespace dl::data;

TEST(Planes, FastSplitMatchesThePlainLoop) {
  std::mt19937 rng(3);
  for (int channels : {1, 3}) {
    const int h = 37, w = 53;
    const std::size_t stride = static_cast<std::size_t>(w + 5) * channels;
    std::vector<std::uint8_t> src(stride * (h + 4));
    for (auto& b : src) b = static_cast<std::uint8_t>(rng());
    for (bool flip : {false, true}) {
      std::vector<std::uint8_t> fast(static_cast<std::size_t>(h) * w * channels);
      std::vector<std::uint8_t> plain(fast.size());
      to_planes(src.data(), stride, channels, 2, 3, h, w, flip, fast.data());
      to_planes_plain(src.data(), stride, channels, 2, 3, h, w, flip, plain.data());
      EXPECT_EQ(fast, plain) << channels << " channels, flip " << flip;
    }
  }
  // The plain loop itself: a mirrored 1x3 RGB row.
  const std::uint8_t row[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::uint8_t out[9];
  to_planes_plain(row, 9, 3, 0, 0, 1, 3, true, out);
  EXPECT_EQ(std::vector<std::uint8_t>(out, out + 9),
            (std::vector<std::uint8_t>{7, 4, 1, 8, 5, 2, 9, 6, 3}));
}

#if DL_HAVE_OPENCV && DL_HAVE_LIBJPEG

constexpr std::int64_t kNoLimit = std::int64_t{1} << 40;

// A noisy colour picture (so every block has detail), 4:2:0 as cv::imwrite writes by default.
std::vector<std::uint8_t> noisy_jpeg(int rows, int cols, bool grey) {
  cv::Mat image(rows, cols, CV_8UC3);
  cv::randu(image, cv::Scalar::all(0), cv::Scalar::all(255));
  cv::GaussianBlur(image, image, cv::Size(5, 5), 0);
  if (grey) cv::cvtColor(image, image, cv::COLOR_BGR2GRAY);
  std::vector<std::uint8_t> bytes;
  EXPECT_TRUE(cv::imencode(".jpg", image, bytes, {cv::IMWRITE_JPEG_QUALITY, 90}));
  return bytes;
}

// OpenCV's full decode as RGB (or grey) rows.
cv::Mat full_decode(const std::vector<std::uint8_t>& bytes, bool grey) {
  cv::Mat image = cv::imdecode(bytes, grey ? cv::IMREAD_GRAYSCALE : cv::IMREAD_COLOR);
  if (!grey) cv::cvtColor(image, image, cv::COLOR_BGR2RGB);
  return image;
}

void expect_window_matches(const cv::Mat& full, const JpegRegion& r, const Window& w) {
  ASSERT_EQ(r.channels, full.channels());
  for (int y = 0; y < w.height; ++y) {
    const std::uint8_t* got = r.pixels + static_cast<std::size_t>(y) * r.row_stride;
    const std::uint8_t* want = full.ptr<std::uint8_t>(w.top + y) + w.left * full.channels();
    ASSERT_EQ(0, std::memcmp(got, want, static_cast<std::size_t>(w.width) * full.channels()))
        << "row " << y << " of window (" << w.top << ", " << w.left << ") " << w.height << "x"
        << w.width;
  }
}

TEST(JpegRegion, WindowsEqualTheFullDecode) {
  for (bool grey : {false, true}) {
    const auto bytes = noisy_jpeg(203, 171, grey);
    const cv::Mat full = full_decode(bytes, grey);
    std::vector<std::uint8_t> buffer;
    for (const Window& w : {Window{0, 0, 203, 171}, Window{17, 29, 101, 77}, Window{1, 1, 9, 9},
                            Window{150, 120, 53, 51}, Window{0, 100, 203, 71}}) {
      JpegRegion r;
      ASSERT_EQ(decode_jpeg_window(
                    bytes.data(), bytes.size(), grey ? 1 : 3, kNoLimit, [&](int, int) { return w; },
                    buffer, &r),
                JpegOutcome::kDecoded);
      EXPECT_EQ(r.image_height, 203);
      EXPECT_EQ(r.image_width, 171);
      expect_window_matches(full, r, w);
    }
  }
}

TEST(JpegRegion, ColourAsGreyIsOpenCvsGreyscaleDecode) {
  const auto bytes = noisy_jpeg(64, 48, false);
  const cv::Mat grey = full_decode(bytes, true);
  std::vector<std::uint8_t> buffer;
  JpegRegion r;
  const Window w{5, 7, 30, 20};
  ASSERT_EQ(decode_jpeg_window(
                bytes.data(), bytes.size(), 1, kNoLimit, [&](int, int) { return w; }, buffer, &r),
            JpegOutcome::kDecoded);
  expect_window_matches(grey, r, w);
}

TEST(JpegRegion, WindowIsClampedToTheImage) {
  const auto bytes = noisy_jpeg(40, 30, false);
  std::vector<std::uint8_t> buffer;
  JpegRegion r;
  ASSERT_EQ(decode_jpeg_window(
                bytes.data(), bytes.size(), 3, kNoLimit,
                [](int, int) {
                  return Window{30, 20, 100, 100};
                },
                buffer, &r),
            JpegOutcome::kDecoded);
  EXPECT_EQ(r.window.top, 30);
  EXPECT_EQ(r.window.left, 20);
  EXPECT_EQ(r.window.height, 10);
  EXPECT_EQ(r.window.width, 10);
}

TEST(JpegRegion, RefusesWhatIsNotAJpeg) {
  std::vector<std::uint8_t> buffer;
  JpegRegion r;
  auto whole = [](int h, int w) { return Window{0, 0, h, w}; };
  std::vector<std::uint8_t> png;
  ASSERT_TRUE(cv::imencode(".png", cv::Mat(8, 8, CV_8UC3, cv::Scalar::all(9)), png));
  EXPECT_EQ(decode_jpeg_window(png.data(), png.size(), 3, kNoLimit, whole, buffer, &r),
            JpegOutcome::kNotHandled);
  // A JPEG start followed by junk: libjpeg's error path (a longjmp) must come back as false.
  std::vector<std::uint8_t> junk{0xFF, 0xD8, 0xFF, 0xC0, 0x00, 0x03, 0x01};
  std::mt19937 rng(11);
  for (int i = 0; i < 400; ++i) junk.push_back(static_cast<std::uint8_t>(rng()));
  EXPECT_EQ(decode_jpeg_window(junk.data(), junk.size(), 3, kNoLimit, whole, buffer, &r),
            JpegOutcome::kNotHandled);
  // Cut short inside the scan data: decodable (the tail comes out grey), as OpenCV and PIL allow.
  auto cut = noisy_jpeg(64, 64, false);
  cut.resize(cut.size() / 2);
  EXPECT_EQ(decode_jpeg_window(cut.data(), cut.size(), 3, kNoLimit, whole, buffer, &r),
            JpegOutcome::kDecoded);
}

// Found by tests/fuzz/jpeg_region_fuzz: a 320-byte JPEG whose header claims 49944 x 32808 pixels
// took seconds and hundreds of megabytes to decode a window of. Refused, as OpenCV refuses it.
TEST(JpegRegion, RefusesImagesAboveOpenCvsPixelLimit) {
  std::string file = read_file(std::string(dl::test::kSourceDir) +
                               "/tests/fuzz/corpus/jpeg_region/slow-huge-header");
  ASSERT_GT(file.size(), 9u);
  file.resize(file.size() - 11);  // the harness's window bytes
  std::vector<std::uint8_t> bytes(file.begin(), file.end());
  std::vector<std::uint8_t> buffer;
  JpegRegion r;
  auto whole = [](int h, int w) { return Window{0, 0, h, w}; };
  // Even with no pixel limit of the caller's (--max-image-pixels), OpenCV's own holds.
  EXPECT_EQ(decode_jpeg_window(bytes.data(), bytes.size(), 1, kNoLimit, whole, buffer, &r),
            JpegOutcome::kNotHandled);
  EXPECT_TRUE(buffer.empty());
  // The fallback decoder refuses it too (file_list_source.cpp counts that as undecodable).
  EXPECT_THROW(cv::imdecode(bytes, cv::IMREAD_GRAYSCALE), cv::Exception);
}

// The loader's view at full scale (scaled_decode off): the same training crops (same random
// stream) as decoding the whole file with OpenCV and cropping, byte for byte; and the evaluation
// transform too.
TEST(JpegRegion, ImageFolderCropsEqualFullDecodeCrops) {
  TempDir dir;
  const auto bytes = noisy_jpeg(256, 256, false);
  write_bytes(dir.file("a.jpg"), bytes);
  const cv::Mat full = full_decode(bytes, false);
  const auto source = make_file_list_source({{dir.file("a.jpg"), 0}}, dir.path(), "ImageFolder");
  for (bool train : {true, false}) {
    Transform t;
    t.out = ImageShape{3, 224, 224};
    t.train = train;
    t.scaled_decode = false;
    for (std::uint32_t seed = 0; seed < 20; ++seed) {
      std::mt19937 rng_a(seed), rng_b(seed);
      std::vector<std::uint8_t> a(t.out.bytes()), b(t.out.bytes());
      ASSERT_TRUE(source->load(0, t, rng_a, a.data()));
      transform_interleaved(full.data, full.rows, full.cols, 3, full.step[0], t, rng_b, b.data());
      ASSERT_EQ(a, b) << (train ? "train" : "eval") << " seed " << seed;
      EXPECT_EQ(rng_a(), rng_b()) << "the two paths must draw the same random numbers";
    }
  }
}

TEST(JpegScale, TheSmallestScaleThatKeepsTheMinimum) {
  EXPECT_EQ(jpeg_scale_for(448, 448, 224, 224), 4);
  EXPECT_EQ(jpeg_scale_for(447, 448, 224, 224), 8);  // 447 x 4/8 = 223.5: one row short
  EXPECT_EQ(jpeg_scale_for(896, 900, 224, 224), 2);
  EXPECT_EQ(jpeg_scale_for(1792, 1792, 224, 224), 1);
  EXPECT_EQ(jpeg_scale_for(5000, 500, 224, 224), 4);  // the narrow side decides
  EXPECT_EQ(jpeg_scale_for(256, 256, 224, 224), 8);   // 7/8 would do, but is slower than 8/8
  EXPECT_EQ(jpeg_scale_for(200, 900, 224, 224), 8);   // smaller than the output: full size
  EXPECT_EQ(jpeg_scale_for(1000, 1000, 0, 0), 8);     // no minimum: full size
}

// A window decoded at scale M/8 is, pixel for pixel, the same window cut out of the whole image
// decoded at M/8 (OpenCV's IMREAD_REDUCED_* modes are libjpeg's 4/8, 2/8 and 1/8), and `box` is
// the window's edges times M/8 in that block.
TEST(JpegRegion, ScaledWindowsEqualTheScaledFullDecode) {
  const auto bytes = noisy_jpeg(611, 517, false);
  std::vector<std::uint8_t> buffer;
  for (const auto& [m, mode] :
       {std::pair{4, cv::IMREAD_REDUCED_COLOR_2}, std::pair{2, cv::IMREAD_REDUCED_COLOR_4},
        std::pair{1, cv::IMREAD_REDUCED_COLOR_8}}) {
    cv::Mat full = cv::imdecode(bytes, mode);
    cv::cvtColor(full, full, cv::COLOR_BGR2RGB);
    ASSERT_EQ(full.rows, (611 * m + 7) / 8);
    for (Window w :
         {Window{0, 0, 611, 517}, Window{37, 101, 333, 251}, Window{300, 260, 311, 257}}) {
      // The minimum that gives scale m: the window's own size times m/8, rounded down.
      w.min_height = w.height * m / 8;
      w.min_width = w.width * m / 8;
      ASSERT_EQ(jpeg_scale_for(w.height, w.width, w.min_height, w.min_width), m);
      JpegRegion r;
      ASSERT_EQ(
          decode_jpeg_window(
              bytes.data(), bytes.size(), 3, kNoLimit, [&](int, int) { return w; }, buffer, &r),
          JpegOutcome::kDecoded);
      ASSERT_EQ(r.scale, m);
      const int block_top = w.top * m / 8;
      const int block_left = w.left * m / 8;
      EXPECT_EQ(r.rows, std::min(full.rows, ((w.top + w.height) * m + 7) / 8) - block_top);
      EXPECT_EQ(r.cols, std::min(full.cols, ((w.left + w.width) * m + 7) / 8) - block_left);
      EXPECT_DOUBLE_EQ(r.box_top, w.top * m / 8.0 - block_top);
      EXPECT_DOUBLE_EQ(r.box_left, w.left * m / 8.0 - block_left);
      EXPECT_DOUBLE_EQ(r.box_bottom, (w.top + w.height) * m / 8.0 - block_top);
      EXPECT_DOUBLE_EQ(r.box_right, (w.left + w.width) * m / 8.0 - block_left);
      for (int y = 0; y < r.rows; ++y) {
        const std::uint8_t* got = r.pixels + static_cast<std::size_t>(y) * r.row_stride;
        const std::uint8_t* want = full.ptr<std::uint8_t>(block_top + y) + block_left * 3;
        ASSERT_EQ(0, std::memcmp(got, want, static_cast<std::size_t>(r.cols) * 3))
            << "scale " << m << "/8, row " << y << " of window (" << w.top << ", " << w.left << ")";
      }
    }
  }
}

// The loader's default: photo-sized JPEGs decoded at the scale the crop allows end near the
// full-scale result (the same crop, flip and random stream); the difference is the scaled IDCT's
// smoothing, measured here on noisy pictures, the hardest case, and kept as the bound.
TEST(JpegRegion, ScaledDecodeCropsStayNearTheFullScaleOnes) {
  TempDir dir;
  const auto bytes = noisy_jpeg(900, 700, false);
  write_bytes(dir.file("a.jpg"), bytes);
  const auto source = make_file_list_source({{dir.file("a.jpg"), 0}}, dir.path(), "ImageFolder");
  for (bool train : {true, false}) {
    Transform full;
    full.out = ImageShape{3, 224, 224};
    full.train = train;
    full.scaled_decode = false;
    Transform scaled = full;
    scaled.scaled_decode = true;
    double total = 0;
    std::size_t count = 0;
    for (std::uint32_t seed = 0; seed < 20; ++seed) {
      std::mt19937 rng_a(seed), rng_b(seed);
      std::vector<std::uint8_t> a(full.out.bytes()), b(full.out.bytes());
      ASSERT_TRUE(source->load(0, full, rng_a, a.data()));
      ASSERT_TRUE(source->load(0, scaled, rng_b, b.data()));
      EXPECT_EQ(rng_a(), rng_b()) << "the two paths must draw the same random numbers";
      for (std::size_t i = 0; i < a.size(); ++i) total += std::abs(a[i] - b[i]);
      count += a.size();
    }
    const double mean = total / static_cast<double>(count);
    std::cout << (train ? "train" : "eval") << ": mean |scaled - full| " << mean << " levels\n";
    EXPECT_LT(mean, 3.0) << (train ? "train" : "eval");
  }
  const DecodeScales scales = source->decode_scales();
  std::int64_t reduced = 0;
  for (int m = 0; m < 7; ++m) reduced += scales[static_cast<std::size_t>(m)];
  EXPECT_GT(reduced, 0) << "a 900 x 700 picture leaves room to decode smaller";
}

#endif

}  // namespace
}  // namespace dl::test
