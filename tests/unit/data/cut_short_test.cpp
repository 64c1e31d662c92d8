// Files cut short, of every format the data layer decodes, and JPEGs with garbage in their scan
// data: decode_image refuses each (with training crops, which decode only part of a JPEG, and the
// evaluation transform, which decodes all of it) and says why: "cut short" for a missing tail,
// "undecodable" with libjpeg's "Corrupt JPEG data" warning for garbage. The whole files decode.
// Every file is written here (OpenCV, and libjpeg for progressive JPEGs).
#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "data/image_decode.h"
#include "data/image_header.h"
#include "support/files.h"
#include "unit/data/cut_points.h"

#if DL_HAVE_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#endif
#if DL_HAVE_LIBJPEG
#include "unit/data/jpeg_writer.h"
#endif

namespace dl::test {
namespace {

using namespace dl::data;

#if DL_HAVE_OPENCV

constexpr std::int64_t kNoLimit = std::int64_t{1} << 40;
constexpr int kWidth = 160;
constexpr int kHeight = 120;

// Smooth colours plus noise: enough entropy-coded data that a cut lands inside it.
std::uint8_t sample(int x, int y, int c, std::mt19937& rng) {
  return static_cast<std::uint8_t>((x * (c + 1) + y * (3 - c) + static_cast<int>(rng() % 48)) &
                                   0xFF);
}

cv::Mat picture() {
  std::mt19937 rng(7);
  cv::Mat m(kHeight, kWidth, CV_8UC3);
  for (int y = 0; y < kHeight; ++y) {
    for (int x = 0; x < kWidth; ++x) {
      for (int c = 0; c < 3; ++c) m.at<cv::Vec3b>(y, x)[c] = sample(x, y, c, rng);
    }
  }
  return m;
}

struct Format {
  std::string name;
  Bytes bytes;
};

Bytes encode(const std::string& ext, const std::vector<int>& params = {}) {
  Bytes bytes;
  EXPECT_TRUE(cv::imencode(ext, picture(), bytes, params)) << ext;
  return bytes;
}

// Every format read_image_header knows, as their usual writers write them.
std::vector<Format> formats() {
  std::vector<Format> out = {
      {"JPEG baseline", encode(".jpg", {cv::IMWRITE_JPEG_QUALITY, 90})},
      {"JPEG progressive (OpenCV)", encode(".jpg", {cv::IMWRITE_JPEG_PROGRESSIVE, 1})},
      {"JPEG with restart markers", encode(".jpg", {cv::IMWRITE_JPEG_RST_INTERVAL, 4})},
      {"PNG", encode(".png")},
      {"BMP", encode(".bmp")},
      {"WebP lossy", encode(".webp", {cv::IMWRITE_WEBP_QUALITY, 90})},
      {"WebP lossless", encode(".webp", {cv::IMWRITE_WEBP_QUALITY, 101})},
      {"TIFF", encode(".tiff")},
      {"PNM binary (P6)", encode(".ppm")},
      {"PNM ASCII (P3)", encode(".ppm", {cv::IMWRITE_PXM_BINARY, 0})},
  };
#if DL_HAVE_LIBJPEG
  JpegSpec spec;
  spec.width = kWidth;
  spec.height = kHeight;
  spec.progressive = true;
  std::mt19937 rng(9);
  out.push_back({"JPEG progressive (libjpeg)",
                 write_jpeg(spec, [&](int x, int y, int c) { return sample(x, y, c, rng); })});
#endif
  return out;
}

Transform eval_transform() {
  Transform t;
  t.out = ImageShape{3, 32, 32};
  return t;
}

Transform train_transform() {
  Transform t = eval_transform();
  t.train = true;
  return t;
}

// Decodes with `t` and the stream `seed`: whether a picture came out, and if not, why.
struct Result {
  bool decoded = false;
  DecodeFailure failure;
};

Result decode(const Bytes& bytes, const Transform& t, unsigned seed) {
  std::vector<std::uint8_t> out(t.out.bytes());
  std::mt19937 rng(seed);
  Result r;
  r.decoded = decode_image(bytes.data(), bytes.size(), t, rng, kNoLimit, out.data(), &r.failure);
  return r;
}

// Every path decode_image takes for a sample: evaluation (whole image) and training crops (a few
// streams: crops near the top decode only the top of a JPEG), at a reduced JPEG scale (the
// default) and at full size.
std::vector<std::pair<Transform, unsigned>> ways() {
  std::vector<std::pair<Transform, unsigned>> out{{eval_transform(), 0}};
  for (unsigned seed = 1; seed <= 6; ++seed) out.emplace_back(train_transform(), seed);
  for (Transform t : {eval_transform(), train_transform()}) {
    t.scaled_decode = false;
    out.emplace_back(t, 7);
  }
  return out;
}

TEST(CutShort, EveryFormatCutAnywhereIsCutShortNeverAPicture) {
  int cases = 0;
  for (const Format& f : formats()) {
    const Bytes& whole = f.bytes;
    ASSERT_GT(whole.size(), 1000u) << f.name;
    for (const auto& [t, seed] : ways()) {
      const Result r = decode(whole, t, seed);
      ASSERT_TRUE(r.decoded) << f.name << " whole: " << r.failure.detail;
    }
    for (const auto& [where, at] : cut_points(whole, f.name.find("ASCII") == std::string::npos)) {
      const std::string what = f.name + " cut at " + where + " (" + std::to_string(at) + " of " +
                               std::to_string(whole.size()) + " bytes)";
      std::string seen;  // the reasons given, for the table
      for (const auto& [t, seed] : ways()) {
        const Result r = decode(cut(whole, at), t, seed);
        EXPECT_FALSE(r.decoded) << what;
        EXPECT_EQ(r.failure.reason, SkipReason::kCutShort) << what << ": " << r.failure.detail;
        EXPECT_NE(r.failure.detail.find("data end at byte " + std::to_string(at)),
                  std::string::npos)
            << what << ": " << r.failure.detail;
        const std::string reason = r.decoded ? "a picture" : skip_reason_name(r.failure.reason);
        if (seen.find(reason) == std::string::npos) seen += (seen.empty() ? "" : ", ") + reason;
        ++cases;
      }
      std::printf("| %s | %s | %zu of %zu | %s |\n", f.name.c_str(), where.c_str(), at,
                  whole.size(), seen.c_str());
    }
  }
  EXPECT_EQ(cases, (11 * 4 - 1) * 9);
}

TEST(CutShort, GarbageInAJpegScanIsUndecodableNotAPicture) {
  int cases = 0;
  for (const Format& f : formats()) {
    if (f.name.rfind("JPEG", 0) != 0) continue;
    const Bytes bad = with_garbage(f.bytes);
    for (const auto& [t, seed] : ways()) {
      const Result r = decode(bad, t, seed);
      EXPECT_FALSE(r.decoded) << f.name << " seed " << seed;
      EXPECT_EQ(r.failure.reason, SkipReason::kUndecodable) << f.name << ": " << r.failure.detail;
      EXPECT_EQ(r.failure.detail.rfind("Corrupt JPEG data", 0), 0u) << f.name << ": " << r.failure.detail;
      ++cases;
    }
  }
  EXPECT_GE(cases, 3 * 9);
}

// What PIL and OpenCV load stays a picture: bytes between the last scan and EOI (libjpeg's
// "extraneous bytes before marker 0xd9"), and anything after EOI (a phone's appended video).
TEST(CutShort, BytesAroundTheEndOfImageMarkerAreNoDamage) {
  for (const Format& f : formats()) {
    if (f.name.rfind("JPEG", 0) != 0) continue;
    Bytes extra = f.bytes;
    extra.insert(extra.end() - 2, {0x12, 0x34, 0x56});
    Bytes appended = f.bytes;
    appended.insert(appended.end(), 5000, 0x5A);
    for (const auto& [t, seed] : ways()) {
      EXPECT_TRUE(decode(extra, t, seed).decoded) << f.name;
      EXPECT_TRUE(decode(appended, t, seed).decoded) << f.name;
    }
  }
}

#endif  // DL_HAVE_OPENCV

}  // namespace
}  // namespace dl::test
