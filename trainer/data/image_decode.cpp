// Decoding one image file's bytes into a sample (see image_decode.h).
#include "data/image_decode.h"

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#if DL_HAVE_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "data/crop_plan.h"
#include "data/image_extent.h"
#include "data/image_header.h"
#include "data/jpeg_region.h"
#include "data/transform.h"
#endif

namespace dl::data {

DecodeScales read_scale_counters(const ScaleCounters& counters) {
  DecodeScales out{};
  for (std::size_t m = 0; m < out.size(); ++m) {
    out[m] = counters[m].load(std::memory_order_relaxed);
  }
  return out;
}

#if DL_HAVE_OPENCV
namespace {

// A worker's decoded pixels keep their capacity from sample to sample, unless an unusually large
// image grew them beyond this: then they are given back, so that a worker does not hold the
// largest image it ever saw.
constexpr std::size_t kKeptPixelBytes = std::size_t{64} << 20;

bool fail(DecodeFailure* failure, SkipReason reason, std::string detail) {
  if (failure != nullptr) *failure = DecodeFailure{reason, std::move(detail)};
  return false;
}

std::string size_text(std::int64_t width, std::int64_t height, std::int64_t limit) {
  return std::to_string(width) + "x" + std::to_string(height) +
         " pixels, more than max-image-pixels " + std::to_string(limit);
}

// JPEGs through libjpeg directly: in training only the planned crop is decoded, and (with
// t.scaled_decode) at the smallest scale M/8 that keeps it the output's size, in evaluation the
// whole image at the scale the resize allows (see jpeg_region.h); the decoder writes RGB, so no
// channel swap either. kNotHandled for what it does not handle (CMYK, corrupt data), which then
// goes the OpenCV way and fails there if it must. Draws the same random numbers as the OpenCV
// path; the loader seeds each sample's stream, so what a failed attempt drew cannot shift any
// other sample.
// A damaged window (libjpeg warned of missing or corrupt data: region.damage) is decoded but not
// transformed; the caller refuses it.
JpegOutcome decode_jpeg(const std::uint8_t* data, std::size_t size, const Transform& t,
                        std::mt19937& rng, std::int64_t max_pixels, std::uint8_t* dst,
                        ScaleCounters* scales, EntropyLease* lease, JpegRegion& region) {
  thread_local std::vector<std::uint8_t> pixels;
  TrainCrop crop;
  // One pointer captured, so std::function keeps it inline: no allocation per sample.
  struct Planner {
    const Transform& t;
    std::mt19937& rng;
    TrainCrop& crop;
  } planner{t, rng, crop};
  auto choose = [p = &planner](int height, int width) {
    const Transform& tf = p->t;
    if (!tf.train) {
      const EvalResize r = plan_eval_resize(height, width, tf);
      return tf.scaled_decode ? Window{0, 0, height, width, r.resized_height, r.resized_width}
                              : Window{0, 0, height, width};
    }
    p->crop = plan_train_crop(height, width, tf, p->rng);
    Window w{p->crop.top, p->crop.left, p->crop.height, p->crop.width};
    if (tf.scaled_decode) {
      w.min_height = tf.out.height;
      w.min_width = tf.out.width;
    }
    return w;
  };
  const JpegOutcome outcome = decode_jpeg_window(data, size, t.out.channels == 1 ? 1 : 3,
                                                 max_pixels, choose, pixels, &region, lease);
  if (outcome == JpegOutcome::kDecoded && region.damage == JpegDamage::kNone) {
    if (scales != nullptr) {
      (*scales)[static_cast<std::size_t>(region.scale - 1)].fetch_add(1, std::memory_order_relaxed);
    }
    if (region.scale < 8) {
      const ScaledWindow scaled{
          region.pixels,
          region.row_stride,
          region.channels,
          region.rows,
          region.cols,
          Box{region.box_top, region.box_left, region.box_bottom, region.box_right}};
      if (t.train) {
        transform_scaled_crop(scaled, crop.flip, t, dst);
      } else {
        transform_scaled_eval(scaled, region.image_height, region.image_width, t, dst);
      }
    } else if (t.train) {
      transform_planned_crop(region.pixels, region.row_stride, region.channels, crop, t, dst);
    } else {
      transform_interleaved(region.pixels, region.image_height, region.image_width, region.channels,
                            region.row_stride, t, rng, dst);
    }
  }
  if (pixels.capacity() > kKeptPixelBytes) std::vector<std::uint8_t>().swap(pixels);
  return outcome;
}

}  // namespace

bool decode_image(const std::uint8_t* data, std::size_t size, const Transform& t, std::mt19937& rng,
                  std::int64_t max_pixels, std::uint8_t* dst, DecodeFailure* failure,
                  ScaleCounters* scales, EntropyLease* lease) {
  if (size == 0) return fail(failure, SkipReason::kEmpty, "0 bytes");
  if (size > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
    return fail(failure, SkipReason::kTooLarge, std::to_string(size) + " bytes");
  }
  // Nothing is decoded before its size is known and within the limit.
  const ImageHeader header = read_image_header(data, size);
  if (header.format == ImageFormat::kUnknown) {
    return fail(failure, SkipReason::kNotAnImage, "not a JPEG, PNG, BMP, WebP, TIFF or PNM file");
  }
  if (!header.sized()) {
    std::string short_by = cut_short(header, data, size);
    if (!short_by.empty()) return fail(failure, SkipReason::kCutShort, std::move(short_by));
    return fail(failure, SkipReason::kUndecodable,
                std::string(format_name(header.format)) + " header without a size");
  }
  if (header.pixels() > max_pixels) {
    return fail(failure, SkipReason::kTooLarge, size_text(header.width, header.height, max_pixels));
  }
  // Decoders fill a missing tail (grey, or nothing at all below a partial decode's crop); the
  // file's structure says where its data end, the same for every crop and decoder.
  std::string short_by = cut_short(header, data, size);
  if (!short_by.empty()) return fail(failure, SkipReason::kCutShort, std::move(short_by));
  const bool grey = t.out.channels == 1;
  if (header.format == ImageFormat::kJpeg && jpeg_region_available()) {
    JpegRegion region;
    switch (decode_jpeg(data, size, t, rng, max_pixels, dst, scales, lease, region)) {
      case JpegOutcome::kDecoded:
        // Damage the walk above cannot see: corrupt scan data in the part decoded, or a scan
        // that ends (at a marker) before its last MCU.
        if (region.damage == JpegDamage::kCutShort) {
          return fail(failure, SkipReason::kCutShort, region.damage_text);
        }
        if (region.damage == JpegDamage::kCorrupt) {
          return fail(failure, SkipReason::kUndecodable, region.damage_text);
        }
        return true;
      case JpegOutcome::kTooLarge:
        return fail(failure, SkipReason::kTooLarge,
                    size_text(header.width, header.height, max_pixels));
      case JpegOutcome::kTooMuchMemory:
        return fail(failure, SkipReason::kTooLarge,
                    "a JPEG whose decoding needs " + std::to_string(region.memory_needed >> 20) +
                        " MiB, more than " + std::to_string(kMaxDecodeBytes >> 20) + " MiB");
      case JpegOutcome::kTooManyScans:
        return fail(failure, SkipReason::kTooLarge,
                    "more than " + std::to_string(kMaxProgressiveScans) + " progressive scans");
      case JpegOutcome::kNotHandled:
        break;  // CMYK, corrupt: OpenCV tries
    }
  }
  // IMREAD_COLOR drops alpha, expands grey to 3 channels and scales 16-bit samples to 8 bits;
  // EXIF orientation is ignored because PIL, and so torchvision's reference pipeline, ignores it
  // too.
  const int flags =
      (grey ? cv::IMREAD_GRAYSCALE : cv::IMREAD_COLOR) | cv::IMREAD_IGNORE_ORIENTATION;
  cv::Mat image;
  try {
    image = cv::imdecode(
        cv::Mat(1, static_cast<int>(size), CV_8UC1, const_cast<std::uint8_t*>(data)), flags);
  } catch (const cv::Exception&) {
    return fail(failure, SkipReason::kUndecodable, "the decoder failed");
  }
  if (image.empty() || image.depth() != CV_8U) {
    return fail(failure, SkipReason::kUndecodable,
                std::string(format_name(header.format)) + " data that does not decode");
  }
  transform_interleaved(image.data, image.rows, image.cols, image.channels(), image.step[0], t, rng,
                        dst);
  if (!grey && t.out.channels == 3) {
    // OpenCV decodes BGR. The transform works per channel, so swapping the finished B and R
    // planes equals converting first, at the cost of the (smaller) output, not the input.
    const std::size_t plane =
        static_cast<std::size_t>(t.out.height) * static_cast<std::size_t>(t.out.width);
    std::swap_ranges(dst, dst + plane, dst + 2 * plane);
  }
  return true;
}

#else

bool decode_image(const std::uint8_t*, std::size_t, const Transform&, std::mt19937&, std::int64_t,
                  std::uint8_t*, DecodeFailure* failure, ScaleCounters*, EntropyLease*) {
  if (failure != nullptr) {
    *failure =
        DecodeFailure{SkipReason::kUndecodable, "this build decodes no image files (no OpenCV)"};
  }
  return false;
}

#endif

}  // namespace dl::data
