// Packing a data set into shards (see shard_pack.h).
#include "data/shard_pack.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <random>
#include <stdexcept>

#include "data/tar_writer.h"

#if DL_HAVE_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#endif

namespace dl::data {
namespace {

std::string numbered(const char* format, std::int64_t n) {
  char buf[32];
  std::snprintf(buf, sizeof buf, format, static_cast<long long>(n));
  return buf;
}

#if DL_HAVE_OPENCV
// The sample as stored in its shard: the file's bytes, or re-encoded, or (in-memory sets) a PNG.
bool sample_bytes(const SampleSource& source, std::int64_t index, const PackOptions& options,
                  std::vector<std::uint8_t>& bytes, std::string* ext) {
  if (source.encoded_file(index, bytes, ext)) {
    if (options.max_side <= 0) return true;
    *ext = "jpg";
    return shrink_to_jpeg(bytes, options.max_side, options.quality);
  }
  // In memory: the native image, untransformed, as a lossless PNG.
  const ImageShape native = source.native_shape();
  if (native.height <= 0 || native.width <= 0) return false;
  Transform whole;
  whole.out = native;
  whole.eval_crop_fraction = 1.0f;
  std::vector<std::uint8_t> planes(native.bytes());
  std::mt19937 rng(0);
  if (!source.load(index, whole, rng, planes.data())) return false;
  const int c = native.channels;
  cv::Mat image(native.height, native.width, CV_8UC(c));
  const std::size_t plane = static_cast<std::size_t>(native.height) * native.width;
  for (std::size_t p = 0; p < plane; ++p) {
    for (int k = 0; k < c; ++k) {
      // OpenCV writes BGR: planes R, G, B go to channels 2, 1, 0.
      image.data[p * c + (c == 3 ? 2 - k : k)] = planes[static_cast<std::size_t>(k) * plane + p];
    }
  }
  *ext = "png";
  return cv::imencode(".png", image, bytes);
}
#else
bool sample_bytes(const SampleSource& source, std::int64_t index, const PackOptions& options,
                  std::vector<std::uint8_t>& bytes, std::string* ext) {
  if (options.max_side > 0) {
    throw std::invalid_argument("--max-side: this build has no OpenCV to re-encode images");
  }
  return source.encoded_file(index, bytes, ext);
}
#endif

}  // namespace

bool shrink_to_jpeg(std::vector<std::uint8_t>& bytes, int max_side, int quality) {
#if DL_HAVE_OPENCV
  cv::Mat image = cv::imdecode(bytes, cv::IMREAD_COLOR | cv::IMREAD_IGNORE_ORIENTATION);
  if (image.empty()) return false;
  const int side = std::max(image.rows, image.cols);
  if (side > max_side) {
    const double f = static_cast<double>(max_side) / side;
    cv::Mat small;
    cv::resize(image, small,
               cv::Size(std::max(1, static_cast<int>(image.cols * f + 0.5)),
                        std::max(1, static_cast<int>(image.rows * f + 0.5))),
               0, 0, cv::INTER_AREA);
    image = small;
  }
  return cv::imencode(".jpg", image, bytes, {cv::IMWRITE_JPEG_QUALITY, quality});
#else
  (void)bytes;
  (void)max_side;
  (void)quality;
  throw std::invalid_argument("--max-side: this build has no OpenCV to re-encode images");
#endif
}

PackSummary pack_shards(const SampleSource& source, const PackOptions& options) {
  if (options.shard_bytes < 1) throw std::invalid_argument("--shard-size: expected bytes >= 1");
  if (options.quality < 1 || options.quality > 100) {
    throw std::invalid_argument("--quality " + std::to_string(options.quality) +
                                ": expected 1 to 100");
  }
  PackSummary summary;
  summary.classes = source.num_classes();
  std::unique_ptr<TarWriter> shard;
  std::vector<std::uint8_t> bytes;
  auto close_shard = [&] {
    if (!shard) return;
    shard->finish();
    summary.bytes += shard->bytes();
    summary.shards.push_back(shard->path());
    shard.reset();
  };
  const std::int64_t total = source.size();
  for (std::int64_t i = 0; i < total; ++i) {
    std::string ext;
    if (!sample_bytes(source, i, options, bytes, &ext) || bytes.empty()) {
      ++summary.skipped;
    } else {
      if (!shard) {
        shard = std::make_unique<TarWriter>(
            options.out_dir + "/" + options.prefix +
            numbered("%06lld", static_cast<std::int64_t>(summary.shards.size())) + ".tar");
      }
      const std::string key = numbered("%09lld", i);
      shard->add(key + "." + ext, bytes.data(), bytes.size());
      const std::string label = std::to_string(source.label(i));
      shard->add(key + ".cls", reinterpret_cast<const std::uint8_t*>(label.data()), label.size());
      ++summary.samples;
      if (shard->bytes() >= options.shard_bytes) close_shard();
    }
    if (options.progress) {
      options.progress(i + 1, total, summary.bytes + (shard ? shard->bytes() : 0));
    }
  }
  close_shard();
  return summary;
}

}  // namespace dl::data
