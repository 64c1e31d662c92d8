// Odd and hostile image files in an ImageFolder, each decoded correctly or skipped with its reason:
// 16-bit and grey PNGs, CMYK and progressive JPEGs, 1x1 images, an empty file, a folder named
// x.jpg, names that are not UTF-8, a link loop, and decompression bombs (a tiny file claiming
// 60000x60000 pixels, refused from its header before anything is allocated; a JPEG with more
// progressive scans than any encoder writes). Every file is written here.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "data/csv_manifest.h"
#include "data/file_list_source.h"
#include "data/image_decode.h"
#include "data/image_folder.h"
#include "data/jpeg_region.h"
#include "data/skip_reason.h"
#include "data/transform.h"
#include "support/temp_dir.h"
#include "unit/data/fixtures.h"

#if DL_HAVE_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#endif
#if DL_HAVE_LIBJPEG
#include "unit/data/jpeg_writer.h"
#endif

namespace dl::test {
namespace {

using namespace dl::data;
namespace fs = std::filesystem;

#if DL_HAVE_OPENCV

Transform eval_transform(int side) {
  Transform t;
  t.out = ImageShape{3, side, side};
  t.eval_crop_fraction = 1.0f;
  return t;
}

Transform train_transform(int side) {
  Transform t = eval_transform(side);
  t.train = true;
  return t;
}

Bytes encode(const std::string& ext, const cv::Mat& image) {
  Bytes bytes;
  EXPECT_TRUE(cv::imencode(ext, image, bytes)) << ext;
  return bytes;
}

// A one-file source, as an ImageFolder or CSV manifest makes it.
std::unique_ptr<SampleSource> one_file(const std::string& path,
                                       const ImageFileOptions& options = {}) {
  return make_file_list_source({{path, 0}}, path, "ImageFolder", options);
}

// Loads sample 0 with `t`; every pixel of every channel should be close to `rgb`.
void expect_solid(const SampleSource& source, const Transform& t, const std::array<int, 3>& rgb,
                  int tolerance, const std::string& what) {
  std::vector<std::uint8_t> out(t.out.bytes());
  std::mt19937 rng(5);
  ASSERT_TRUE(source.load(0, t, rng, out.data())) << what;
  const std::size_t plane = static_cast<std::size_t>(t.out.height) * t.out.width;
  for (std::size_t c = 0; c < 3; ++c) {
    for (std::size_t p = 0; p < plane; ++p) {
      ASSERT_NEAR(out[c * plane + p], rgb[c], tolerance)
          << what << ": channel " << c << " pixel " << p;
    }
  }
}

// The reason (and detail) load() gave for sample 0.
SkippedFile expect_skipped(const SampleSource& source, const Transform& t, SkipReason reason,
                           const std::string& what) {
  std::vector<std::uint8_t> out(t.out.bytes());
  std::mt19937 rng(5);
  EXPECT_FALSE(source.load(0, t, rng, out.data())) << what;
  EXPECT_EQ(source.skip_reason(0), reason) << what;
  const auto failures = source.failures();
  EXPECT_EQ(failures.size(), 1u) << what;
  return failures.empty() ? SkippedFile{} : failures[0];
}

std::int64_t peak_rss_kib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

TEST(ImageZoo, SixteenBitPngBecomesEightBit) {
  TempDir dir;
  // BGR: blue 0, green half, red full scale.
  write_bytes(dir.file("deep.png"),
              encode(".png", cv::Mat(6, 5, CV_16UC3, cv::Scalar(0, 0x8000, 0xFFFF))));
  const auto source = one_file(dir.file("deep.png"));
  expect_solid(*source, eval_transform(4), {255, 128, 0}, 0, "16-bit PNG");
  expect_solid(*source, train_transform(4), {255, 128, 0}, 0, "16-bit PNG, training crop");
}

TEST(ImageZoo, GreyPngAndGreyJpegBecomeThreeEqualChannels) {
  TempDir dir;
  write_bytes(dir.file("grey.png"), encode(".png", cv::Mat(9, 7, CV_8UC1, cv::Scalar(77))));
  write_bytes(dir.file("grey.jpg"), encode(".jpg", cv::Mat(16, 16, CV_8UC1, cv::Scalar(200))));
  expect_solid(*one_file(dir.file("grey.png")), eval_transform(4), {77, 77, 77}, 0, "grey PNG");
  expect_solid(*one_file(dir.file("grey.jpg")), train_transform(4), {200, 200, 200}, 2,
               "grey JPEG");
}

TEST(ImageZoo, OneByOneImagesFillTheOutput) {
  TempDir dir;
  write_bytes(dir.file("dot.png"), encode(".png", cv::Mat(1, 1, CV_8UC3, cv::Scalar(10, 20, 30))));
  write_bytes(dir.file("dot.jpg"), encode(".jpg", cv::Mat(1, 1, CV_8UC3, cv::Scalar(10, 20, 30))));
  for (const char* name : {"dot.png", "dot.jpg"}) {
    const auto source = one_file(dir.file(name));
    const int tolerance = std::string(name) == "dot.png" ? 0 : 6;
    expect_solid(*source, eval_transform(8), {30, 20, 10}, tolerance, name);
    expect_solid(*source, train_transform(8), {30, 20, 10}, tolerance, name);
  }
}

TEST(ImageZoo, EmptyFileAndNonImageAreSkippedWithTheirReasons) {
  TempDir dir;
  write_file(dir.file("empty.jpg"), "");
  write_file(dir.file("text.png"), "just some text, not a picture");
  const Transform t = eval_transform(4);
  EXPECT_EQ(expect_skipped(*one_file(dir.file("empty.jpg")), t, SkipReason::kEmpty, "empty").detail,
            "0 bytes");
  const SkippedFile text =
      expect_skipped(*one_file(dir.file("text.png")), t, SkipReason::kNotAnImage, "text");
  EXPECT_EQ(text.path, dir.file("text.png"));
}

TEST(ImageZoo, CutShortPngIsCutShort) {
  TempDir dir;
  cv::Mat noise(64, 64, CV_8UC3);
  cv::randu(noise, cv::Scalar::all(0), cv::Scalar::all(255));
  Bytes png = encode(".png", noise);
  png.resize(png.size() / 2);
  write_bytes(dir.file("cut.png"), png);
  expect_skipped(*one_file(dir.file("cut.png")), eval_transform(4), SkipReason::kCutShort,
                 "cut PNG");
}

// A 64x64 JPEG whose frame header is patched to claim 60000x60000: 3 KB that would take 10 GiB.
Bytes jpeg_bomb() {
  cv::Mat noise(64, 64, CV_8UC3);
  cv::randu(noise, cv::Scalar::all(0), cv::Scalar::all(255));
  Bytes bytes = encode(".jpg", noise);
  for (std::size_t i = 2; i + 8 < bytes.size(); ++i) {
    if (bytes[i] == 0xFF && bytes[i + 1] == 0xC0) {  // SOF0: length, precision, height, width
      bytes[i + 5] = bytes[i + 7] = 60000 >> 8;
      bytes[i + 6] = bytes[i + 8] = 60000 & 0xFF;
      return bytes;
    }
  }
  ADD_FAILURE() << "no SOF0 marker in OpenCV's JPEG";
  return bytes;
}

// A PNG whose IHDR claims 60000x60000 (its checksum is left stale: the file is refused before any
// decoder would look).
Bytes png_bomb() {
  Bytes bytes = encode(".png", cv::Mat(8, 8, CV_8UC3, cv::Scalar::all(1)));
  for (std::size_t at : {16u, 20u}) {
    bytes[at] = 0;
    bytes[at + 1] = 0;
    bytes[at + 2] = 60000 >> 8;
    bytes[at + 3] = 60000 & 0xFF;
  }
  return bytes;
}

TEST(ImageZoo, DecompressionBombsAreRefusedFromTheHeaderAlone) {
  TempDir dir;
  write_bytes(dir.file("bomb.jpg"), jpeg_bomb());
  write_bytes(dir.file("bomb.png"), png_bomb());
  const std::int64_t before = peak_rss_kib();
  for (const char* name : {"bomb.jpg", "bomb.png"}) {
    const auto source = one_file(dir.file(name));
    for (const Transform& t : {eval_transform(8), train_transform(8)}) {
      const SkippedFile f = expect_skipped(*source, t, SkipReason::kTooLarge, name);
      EXPECT_NE(f.detail.find("60000x60000 pixels"), std::string::npos) << f.detail;
      EXPECT_NE(f.detail.find("max-image-pixels 178956970"), std::string::npos) << f.detail;
    }
  }
  // Decoding either would have taken gigabytes; refusing them takes nothing measurable.
  EXPECT_LT(peak_rss_kib() - before, 64 * 1024) << "KiB of peak resident memory added";
}

TEST(ImageZoo, PixelLimitIsASettingAndReachesCsvManifests) {
  TempDir dir;
  write_bytes(dir.file("a.png"), encode(".png", cv::Mat(20, 20, CV_8UC3, cv::Scalar::all(3))));
  write_bytes(dir.file("b.jpg"), encode(".jpg", cv::Mat(20, 20, CV_8UC3, cv::Scalar::all(3))));
  write_file(dir.file("m.csv"), "a.png,0\nb.jpg,1\n");
  ImageFileOptions options;
  options.max_pixels = 399;  // one below 20x20
  const auto source = open_csv_manifest(dir.file("m.csv"), options);
  const Transform t = eval_transform(4);
  std::vector<std::uint8_t> out(t.out.bytes());
  std::mt19937 rng(1);
  EXPECT_FALSE(source->load(0, t, rng, out.data()));
  EXPECT_FALSE(source->load(1, t, rng, out.data()));
  EXPECT_EQ(source->skip_reason(0), SkipReason::kTooLarge);
  EXPECT_EQ(source->skip_reason(1), SkipReason::kTooLarge);
  options.max_pixels = 400;
  const auto allowed = open_csv_manifest(dir.file("m.csv"), options);
  EXPECT_TRUE(allowed->load(0, t, rng, out.data()));
  EXPECT_TRUE(allowed->load(1, t, rng, out.data()));
  EXPECT_TRUE(allowed->failures().empty());
}

#if DL_HAVE_LIBJPEG

TEST(ImageZoo, JpegDecoderRefusesABombBeforeStartingToDecode) {
  const Bytes bomb = jpeg_bomb();
  std::vector<std::uint8_t> buffer;
  JpegRegion r;
  bool asked = false;
  const auto outcome = decode_jpeg_window(
      bomb.data(), bomb.size(), 3, 178956970,
      [&](int h, int w) {
        asked = true;
        return Window{0, 0, h, w};
      },
      buffer, &r);
  EXPECT_EQ(outcome, JpegOutcome::kTooLarge);
  EXPECT_FALSE(asked) << "the window is chosen only once decoding starts";
  EXPECT_EQ(buffer.capacity(), 0u);
}

// OpenCV's 64x64 JPEG (progressive or baseline, 4:2:0) whose frame header claims 20000x20000:
// within the pixel limits below, but 1.2 GB of coefficients for a progressive decode, or 1.2 GB
// of pixels for a baseline one decoded whole.
Bytes claims_20000_square(bool progressive) {
  cv::Mat noise(64, 64, CV_8UC3);
  cv::randu(noise, cv::Scalar::all(0), cv::Scalar::all(255));
  Bytes bytes;
  EXPECT_TRUE(cv::imencode(".jpg", noise, bytes, {cv::IMWRITE_JPEG_PROGRESSIVE, progressive}));
  const std::uint8_t sof = progressive ? 0xC2 : 0xC0;
  for (std::size_t i = 2; i + 8 < bytes.size(); ++i) {
    if (bytes[i] == 0xFF && bytes[i + 1] == sof) {
      bytes[i + 5] = bytes[i + 7] = 20000 >> 8;
      bytes[i + 6] = bytes[i + 8] = 20000 & 0xFF;
      return bytes;
    }
  }
  ADD_FAILURE() << "no SOF marker in OpenCV's JPEG";
  return bytes;
}

TEST(ImageZoo, JpegDecoderRefusesWhatWouldNeedMoreThanItsMemoryBound) {
  constexpr std::int64_t kPixels = 400000000;  // exactly 20000x20000: the size is allowed
  std::vector<std::uint8_t> buffer;
  JpegRegion r;
  bool asked = false;
  const auto whole = [&](int h, int w) {
    asked = true;
    return Window{0, 0, h, w};
  };
  // Progressive: refused from the header, before libjpeg allocates its coefficients.
  const Bytes progressive = claims_20000_square(true);
  EXPECT_EQ(
      decode_jpeg_window(progressive.data(), progressive.size(), 3, kPixels, whole, buffer, &r),
      JpegOutcome::kTooMuchMemory);
  EXPECT_FALSE(asked) << "refused before the window is chosen";
  EXPECT_GT(r.memory_needed, kMaxDecodeBytes);
  EXPECT_EQ(buffer.capacity(), 0u);
  // Baseline, decoded whole at full size: its pixels are over the bound, refused before the buffer.
  const Bytes baseline = claims_20000_square(false);
  r = JpegRegion{};
  EXPECT_EQ(decode_jpeg_window(baseline.data(), baseline.size(), 3, kPixels, whole, buffer, &r),
            JpegOutcome::kTooMuchMemory);
  EXPECT_TRUE(asked);
  EXPECT_EQ(r.memory_needed, std::uint64_t{20000} * 20000 * 3);
  EXPECT_EQ(buffer.capacity(), 0u);
  // Through decode_image, which no other decoder then tries: one line that says why.
  const Transform t = eval_transform(8);
  std::vector<std::uint8_t> out(t.out.bytes());
  std::mt19937 rng(1);
  DecodeFailure failure;
  EXPECT_FALSE(
      decode_image(progressive.data(), progressive.size(), t, rng, kPixels, out.data(), &failure));
  EXPECT_EQ(failure.reason, SkipReason::kTooLarge);
  EXPECT_NE(failure.detail.find("more than 1024 MiB"), std::string::npos) << failure.detail;
}

// Adobe CMYK (inverted: 255 is no ink): no cyan, full magenta and yellow, no black = red.
TEST(ImageZoo, CmykJpegDecodesThroughOpenCv) {
  TempDir dir;
  JpegSpec spec;
  spec.width = 16;
  spec.height = 16;
  spec.components = 4;
  write_bytes(dir.file("cmyk.jpg"), write_jpeg(spec, [](int, int, int c) {
                return static_cast<std::uint8_t>(c == 1 || c == 2 ? 0 : 255);
              }));
  const auto source = one_file(dir.file("cmyk.jpg"));
  expect_solid(*source, eval_transform(4), {255, 0, 0}, 4, "CMYK JPEG");
  expect_solid(*source, train_transform(4), {255, 0, 0}, 4, "CMYK JPEG, training crop");
}

// Progressive files take libjpeg's partial decoding path too: at full size, the same pixels as
// OpenCV's full decode of the same file, for training crops and the evaluation resize alike.
TEST(ImageZoo, ProgressiveJpegEqualsItsFullDecode) {
  TempDir dir;
  JpegSpec spec;
  spec.width = 97;
  spec.height = 75;
  spec.progressive = true;
  std::mt19937 noise(3);
  std::vector<std::uint8_t> values(97 * 75 * 3);
  for (auto& v : values) v = static_cast<std::uint8_t>(noise());
  const Bytes bytes = write_jpeg(spec, [&](int x, int y, int c) {
    return values[(static_cast<std::size_t>(y) * 97 + x) * 3 + c];
  });
  write_bytes(dir.file("progressive.jpg"), bytes);
  cv::Mat full = cv::imdecode(bytes, cv::IMREAD_COLOR);
  ASSERT_FALSE(full.empty());
  cv::Mat rgb;
  cv::cvtColor(full, rgb, cv::COLOR_BGR2RGB);
  const auto source = one_file(dir.file("progressive.jpg"));
  for (Transform t : {eval_transform(32), train_transform(32)}) {
    t.scaled_decode = false;  // full size, as OpenCV decodes (a 32 px output would allow 1/2)
    for (std::uint32_t seed = 0; seed < 8; ++seed) {
      std::mt19937 rng_a(seed), rng_b(seed);
      std::vector<std::uint8_t> a(t.out.bytes()), b(t.out.bytes());
      ASSERT_TRUE(source->load(0, t, rng_a, a.data()));
      transform_interleaved(rgb.data, rgb.rows, rgb.cols, 3, rgb.step[0], t, rng_b, b.data());
      ASSERT_EQ(a, b) << (t.train ? "train" : "eval") << " seed " << seed;
    }
  }
}

// More than kMaxProgressiveScans scans (one per coefficient and bit, as libjpeg's script checker
// allows): each costs a pass over the image, so the file is refused as a bomb while being read.
TEST(ImageZoo, JpegWithThousandsOfScansIsRefused) {
  JpegSpec spec;
  spec.width = 8;
  spec.height = 8;
  for (int c = 0; c < 3; ++c) {
    spec.scans.push_back({c, 0, 0, 0, 0});
    for (int k = 1; k < 64; ++k) {
      spec.scans.push_back({c, k, k, 0, 5});
      for (int al = 5; al > 0; --al) spec.scans.push_back({c, k, k, al, al - 1});
    }
  }
  ASSERT_GT(spec.scans.size(), static_cast<std::size_t>(kMaxProgressiveScans));
  const Bytes bytes = write_jpeg(
      spec, [](int x, int y, int c) { return static_cast<std::uint8_t>(x * 30 + y * 7 + c * 50); });
  TempDir dir;
  write_bytes(dir.file("scans.jpg"), bytes);
  const SkippedFile f = expect_skipped(*one_file(dir.file("scans.jpg")), eval_transform(4),
                                       SkipReason::kTooLarge, "many scans");
  EXPECT_NE(f.detail.find("progressive scans"), std::string::npos) << f.detail;
  // libjpeg's standard progression (10 scans) decodes.
  spec.scans.clear();
  spec.progressive = true;
  write_bytes(dir.file("fine.jpg"), write_jpeg(spec, [](int, int, int) { return 90; }));
  expect_solid(*one_file(dir.file("fine.jpg")), eval_transform(4), {90, 90, 90}, 3, "fine");
}

#endif  // DL_HAVE_LIBJPEG

// --- the listing ---------------------------------------------------------------------------------

TEST(ImageZoo, FolderNamedLikeAnImageIsAFolder) {
  TempDir dir;
  write_bytes(dir.file("cat/a.png"), encode(".png", cv::Mat(4, 4, CV_8UC3, cv::Scalar::all(1))));
  write_bytes(dir.file("cat/x.jpg/inside.png"),
              encode(".png", cv::Mat(4, 4, CV_8UC3, cv::Scalar::all(2))));
  const auto source = open_image_folder(dir.path());
  ASSERT_EQ(source->size(), 2);  // a.png and x.jpg/inside.png; the folder itself is no sample
  const Transform t = eval_transform(4);
  std::vector<std::uint8_t> out(t.out.bytes());
  std::mt19937 rng(1);
  EXPECT_TRUE(source->load(0, t, rng, out.data()));
  EXPECT_TRUE(source->load(1, t, rng, out.data()));
  EXPECT_EQ(out[0], 2);
}

TEST(ImageZoo, NamesThatAreNotUtf8LoadAndPrintEscaped) {
  TempDir dir;
  const std::string odd_class = "\xff\xfe";
  const std::string odd_file = "caf\xe9.png";  // Latin-1, as an old archive would hold it
  write_bytes(dir.file("cat/" + odd_file),
              encode(".png", cv::Mat(4, 4, CV_8UC3, cv::Scalar(0, 0, 200))));
  write_bytes(dir.file(odd_class + "/b.png"),
              encode(".png", cv::Mat(4, 4, CV_8UC3, cv::Scalar(0, 200, 0))));
  write_file(dir.file(odd_class + "/\x01\xff.jpg"), "");
  EXPECT_EQ(image_folder_classes(dir.path()), (std::vector<std::string>{"cat", odd_class}));
  const auto source = open_image_folder(dir.path());
  ASSERT_EQ(source->size(), 3);
  const Transform t = eval_transform(4);
  std::vector<std::uint8_t> out(t.out.bytes());
  std::mt19937 rng(1);
  ASSERT_TRUE(source->load(0, t, rng, out.data()));
  EXPECT_EQ(out[0], 200);                             // red
  EXPECT_FALSE(source->load(1, t, rng, out.data()));  // the empty one sorts first in its folder
  ASSERT_TRUE(source->load(2, t, rng, out.data()));
  EXPECT_EQ(out[16], 200);  // green
  const std::string report = describe_skips({0, 1, 0, 0, 0}, source->failures());
  EXPECT_NE(report.find("1 empty (" + dir.path() + "/\\xFF\\xFE/\\x01\\xFF.jpg: 0 bytes)"),
            std::string::npos)
      << report;
  EXPECT_EQ(printable_path(dir.file("cat/" + odd_file)), dir.path() + "/cat/caf\\xE9.png");
}

// class/loop -> .. (the root) and a second link to a folder already listed: each folder is
// entered once, each link named once, each image counted once.
TEST(ImageZoo, LinkLoopIsNamedOnceAndNotFollowed) {
  TempDir dir;
  const cv::Mat pixel(4, 4, CV_8UC3, cv::Scalar::all(9));
  for (const char* name : {"cat/a.png", "cat/sub/b.png", "dog/c.png", "dog/d.png"}) {
    write_bytes(dir.file(name), encode(".png", pixel));
  }
  fs::create_directory_symlink("..", dir.fs_path() / "cat" / "loop");
  fs::create_directory_symlink("../sub", dir.fs_path() / "cat" / "sub" / "up");  // its own folder
  fs::create_directory_symlink("../cat/sub", dir.fs_path() / "dog" / "again");
  fs::create_symlink("c.png", dir.fs_path() / "dog" / "e.png");  // a file link: a sample
  std::vector<std::string> warnings;
  ImageFileOptions options;
  options.warn = [&](const std::string& line) { warnings.push_back(line); };
  const auto source = open_image_folder(dir.path(), options);
  EXPECT_EQ(source->size(), 5);  // a, sub/b; c, d, e
  ASSERT_EQ(warnings.size(), 3u);
  std::sort(warnings.begin(), warnings.end());
  EXPECT_NE(warnings[0].find(dir.file("cat/loop") + ": leads to a folder already listed"),
            std::string::npos)
      << warnings[0];
  EXPECT_NE(warnings[1].find(dir.file("cat/sub/up")), std::string::npos) << warnings[1];
  EXPECT_NE(warnings[2].find(dir.file("dog/again")), std::string::npos) << warnings[2];
  for (const std::string& w : warnings) EXPECT_EQ(w.find('\n'), std::string::npos);
}

#endif  // DL_HAVE_OPENCV

}  // namespace
}  // namespace dl::test
