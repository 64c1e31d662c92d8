// Writes the ImageFolder benchmark set: 256x256 colour JPEGs (quality 90), N per class, made from
// Fashion-MNIST so no download is needed; with --sides MIN-MAX, photo-sized ones instead, each
// side drawn from MIN..MAX with the sample's own seed (300-1000: what a phone's photo scaled for
// a data set looks like, the size whose decoding a loader's workers must keep up with).
// Deterministic: the same N and the same IDX files give the same files byte for byte (with the same
// libjpeg), so runs on different days read the same bytes.
//
// Each garment is upscaled (bicubic) from 28x28, tinted with a colour drawn from its index, laid on
// a gradient background and given a fixed-seed grain. The grain matters: a flat upscaled drawing
// compresses to a few KB and decodes faster than any photo, which would flatter every loader; with
// it the files weigh about what photos of this size do (20-40 KB) and the entropy decoder works as
// hard as on real data.
//
//   make_jpeg_set --out DIR [--per-class N] [--sides MIN-MAX] [--data FASHION_MNIST_DIR]
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "core/data_location.h"
#include "data/data_error.h"
#include "data/idx.h"

namespace {

namespace fs = std::filesystem;

constexpr int kSide = 256;
constexpr int kQuality = 90;
const char* const kClasses[10] = {"tshirt", "trouser", "pullover", "dress", "coat",
                                  "sandal", "shirt",   "sneaker",  "bag",   "boot"};

struct Sides {
  int min = kSide, max = kSide;
};

// One sample as a BGR image, kSide square or with sides from `sides`. All randomness comes from a
// generator seeded with the sample's index, so the picture does not depend on which other samples
// are written.
cv::Mat render(const std::uint8_t* grey28, std::uint32_t index, Sides sides) {
  std::mt19937 rng(0x9E3779B9u ^ index);
  // The sides from a generator of their own: the default set stays byte for byte what it was.
  std::mt19937 size_rng(0x85EBCA6Bu ^ index);
  std::uniform_int_distribution<int> side(sides.min, sides.max);
  const int width = side(size_rng);
  const int height = side(size_rng);
  std::uniform_int_distribution<int> channel(40, 255);
  const cv::Vec3f tint(static_cast<float>(channel(rng)), static_cast<float>(channel(rng)),
                       static_cast<float>(channel(rng)));
  const cv::Vec3f top(static_cast<float>(channel(rng) / 3), static_cast<float>(channel(rng) / 3),
                      static_cast<float>(channel(rng) / 3));
  const cv::Vec3f bottom(static_cast<float>(channel(rng) / 2), static_cast<float>(channel(rng) / 2),
                         static_cast<float>(channel(rng) / 2));

  cv::Mat small(28, 28, CV_8UC1, const_cast<std::uint8_t*>(grey28));
  cv::Mat shape;
  cv::resize(small, shape, cv::Size(width, height), 0, 0, cv::INTER_CUBIC);

  std::normal_distribution<float> grain(0.0f, 9.0f);
  cv::Mat out(height, width, CV_8UC3);
  for (int y = 0; y < height; ++y) {
    const float v = static_cast<float>(y) / static_cast<float>(height - 1);
    const cv::Vec3f background = top * (1.0f - v) + bottom * v;
    const std::uint8_t* mask = shape.ptr<std::uint8_t>(y);
    cv::Vec3b* row = out.ptr<cv::Vec3b>(y);
    for (int x = 0; x < width; ++x) {
      const float a = mask[x] / 255.0f;
      for (int k = 0; k < 3; ++k) {
        const float value = background[k] * (1.0f - a) + tint[k] * a + grain(rng);
        row[x][k] = cv::saturate_cast<std::uint8_t>(value);
      }
    }
  }
  return out;
}

int usage_error(const std::string& message) {
  std::fprintf(stderr,
               "make_jpeg_set: %s (usage: make_jpeg_set --out DIR [--per-class N] "
               "[--sides MIN-MAX] [--data FASHION_MNIST_DIR])\n",
               message.c_str());
  return 64;
}

}  // namespace

int main(int argc, char** argv) {
  std::string out_dir;
  std::string data_dir = dl::default_data_dir();
  long per_class = 200;
  Sides sides;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--out" && i + 1 < argc) {
      out_dir = argv[++i];
    } else if (a == "--per-class" && i + 1 < argc) {
      char* end = nullptr;
      per_class = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || per_class < 1 || per_class > 6000) {
        return usage_error(std::string("--per-class '") + argv[i] +
                           "': expected a whole number from 1 to 6000");
      }
    } else if (a == "--sides" && i + 1 < argc) {
      const std::string v = argv[++i];
      char* end = nullptr;
      sides.min = static_cast<int>(std::strtol(v.c_str(), &end, 10));
      if (*end == '-') sides.max = static_cast<int>(std::strtol(end + 1, &end, 10));
      if (*end != '\0' || sides.min < 32 || sides.max < sides.min || sides.max > 4096) {
        return usage_error("--sides '" + v +
                           "': expected MIN-MAX pixels, 32 <= MIN <= MAX <= 4096");
      }
    } else if (a == "--data" && i + 1 < argc) {
      data_dir = argv[++i];
    } else {
      return usage_error("unknown argument '" + a + "'");
    }
  }
  if (out_dir.empty()) return usage_error("--out DIR is required");

  try {
    const auto source = dl::data::open_mnist_dir(data_dir, true);
    dl::data::Transform identity;
    identity.out = source->native_shape();
    std::vector<long> written(10, 0);
    std::vector<std::uint8_t> pixels(identity.out.bytes());
    std::mt19937 unused;
    const std::vector<int> params{cv::IMWRITE_JPEG_QUALITY, kQuality};
    std::uintmax_t bytes = 0;
    long total = 0;
    for (std::int64_t i = 0; i < source->size() && total < 10 * per_class; ++i) {
      const auto label = static_cast<std::size_t>(source->label(i));
      if (label >= written.size() || written[label] >= per_class) continue;
      source->load(i, identity, unused, pixels.data());
      const fs::path dir = fs::path(out_dir) / "train" / kClasses[label];
      fs::create_directories(dir);
      char name[32];
      std::snprintf(name, sizeof name, "%05ld.jpg", static_cast<long>(i));
      const fs::path file = dir / name;
      if (!cv::imwrite(file.string(), render(pixels.data(), static_cast<std::uint32_t>(i), sides),
                       params)) {
        std::fprintf(stderr, "make_jpeg_set: %s: cannot write\n", file.c_str());
        return 73;
      }
      bytes += fs::file_size(file);
      ++written[label];
      ++total;
    }
    std::printf(
        "%ld JPEGs (sides %d-%d, quality %d, %ld per class) in %s/train, %.1f KB each on "
        "average\n",
        total, sides.min, sides.max, kQuality, per_class, out_dir.c_str(),
        static_cast<double>(bytes) / 1024.0 / static_cast<double>(total));
  } catch (const dl::data::DataError& e) {
    std::fprintf(stderr, "make_jpeg_set: %s\n", e.what());
    return 66;
  } catch (const fs::filesystem_error& e) {
    std::fprintf(stderr, "make_jpeg_set: %s\n", e.what());
    return 73;
  }
  return 0;
}
