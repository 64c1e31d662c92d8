// Image files decoded with OpenCV (see file_list_source.h). A file that is missing or does not
// decode is not an error here: load() returns false and the loader skips and counts it, as one bad
// JPEG in a million should not end a training run.
#include "data/file_list_source.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "data/data_error.h"

#if DL_HAVE_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "data/crop_plan.h"
#include "data/file_bytes.h"
#include "data/image_header.h"
#include "data/jpeg_region.h"
#include "data/transform.h"
#endif

namespace dl::data {

#if DL_HAVE_OPENCV
namespace {

// A worker's buffers keep their capacity from sample to sample; one that an unusually large image
// grew beyond this is given back, so that each worker does not hold the largest image it ever saw.
constexpr std::size_t kKeptBufferBytes = std::size_t{64} << 20;

void trim(std::vector<std::uint8_t>& buffer) {
  if (buffer.capacity() > kKeptBufferBytes) std::vector<std::uint8_t>().swap(buffer);
}

std::string size_text(std::int64_t width, std::int64_t height, std::int64_t limit) {
  return std::to_string(width) + "x" + std::to_string(height) +
         " pixels, more than max-image-pixels " + std::to_string(limit);
}

class FileListSource : public SampleSource {
 public:
  FileListSource(std::vector<LabelledFile> files, int num_classes, std::string description,
                 std::int64_t max_pixels, std::vector<std::string> class_names)
      : class_names_(std::move(class_names)),
        files_(std::move(files)),
        num_classes_(num_classes),
        description_(std::move(description)),
        max_pixels_(max_pixels),
        max_bytes_(static_cast<std::uint64_t>(max_pixels) * 8 + (std::uint64_t{64} << 20)) {}

  std::int64_t size() const override { return static_cast<std::int64_t>(files_.size()); }
  int num_classes() const override { return num_classes_; }
  std::vector<std::string> class_names() const override {
    return class_names_.empty() ? index_names(num_classes_) : class_names_;
  }
  // Decoded files are RGB; their sizes vary.
  ImageShape native_shape() const override { return ImageShape{3, 0, 0}; }
  std::int64_t label(std::int64_t index) const override {
    return files_[static_cast<std::size_t>(index)].label;
  }
  std::string describe() const override { return description_; }

  bool load(std::int64_t index, const Transform& t, std::mt19937& rng,
            std::uint8_t* dst) const override {
    thread_local std::vector<std::uint8_t> encoded;
    const bool done = load_from(encoded, index, t, rng, dst);
    trim(encoded);
    return done;
  }

  SkipReason skip_reason(std::int64_t index) const override {
    std::lock_guard<std::mutex> lock(failed_mutex_);
    const auto it = failed_.find(index);
    return it == failed_.end() ? SkipReason::kUndecodable : it->second.reason;
  }

  DecodeScales decode_scales() const override {
    DecodeScales out{};
    for (std::size_t m = 0; m < out.size(); ++m) {
      out[m] = decode_scales_[m].load(std::memory_order_relaxed);
    }
    return out;
  }

  std::vector<SkippedFile> failures() const override {
    std::lock_guard<std::mutex> lock(failed_mutex_);
    std::vector<SkippedFile> out;
    out.reserve(failed_.size());
    for (const auto& entry : failed_) out.push_back(entry.second);
    return out;
  }

 private:
  bool load_from(std::vector<std::uint8_t>& encoded, std::int64_t index, const Transform& t,
                 std::mt19937& rng, std::uint8_t* dst) const {
    FileReadError error;
    if (!read_file_into(files_[static_cast<std::size_t>(index)].path, encoded, &error,
                        max_bytes_)) {
      return fail(index, error.too_large ? SkipReason::kTooLarge : SkipReason::kUnreadable,
                  error.message);
    }
    if (encoded.empty()) return fail(index, SkipReason::kEmpty, "0 bytes");
    // Nothing is decoded before its size is known and within the limit.
    const ImageHeader header = read_image_header(encoded.data(), encoded.size());
    if (header.format == ImageFormat::kUnknown) {
      return fail(index, SkipReason::kNotAnImage, "not a JPEG, PNG, BMP, WebP, TIFF or PNM file");
    }
    if (!header.sized()) {
      return fail(index, SkipReason::kUndecodable,
                  std::string(format_name(header.format)) + " header without a size");
    }
    if (header.pixels() > max_pixels_) {
      return fail(index, SkipReason::kTooLarge,
                  size_text(header.width, header.height, max_pixels_));
    }
    const bool grey = t.out.channels == 1;
    if (header.format == ImageFormat::kJpeg && jpeg_region_available()) {
      switch (load_jpeg(encoded, t, rng, dst)) {
        case JpegOutcome::kDecoded:
          forget(index);
          return true;
        case JpegOutcome::kTooLarge:
          return fail(index, SkipReason::kTooLarge,
                      size_text(header.width, header.height, max_pixels_));
        case JpegOutcome::kTooManyScans:
          return fail(index, SkipReason::kTooLarge,
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
      image = cv::imdecode(cv::Mat(1, static_cast<int>(encoded.size()), CV_8UC1, encoded.data()),
                           flags);
    } catch (const cv::Exception&) {
      return fail(index, SkipReason::kUndecodable, "the decoder failed");
    }
    if (image.empty() || image.depth() != CV_8U) {
      return fail(index, SkipReason::kUndecodable,
                  std::string(format_name(header.format)) + " data that does not decode");
    }
    transform_interleaved(image.data, image.rows, image.cols, image.channels(), image.step[0], t,
                          rng, dst);
    if (!grey && t.out.channels == 3) {
      // OpenCV decodes BGR. The transform works per channel, so swapping the finished B and R
      // planes equals converting first, at the cost of the (smaller) output, not the input.
      const std::size_t plane =
          static_cast<std::size_t>(t.out.height) * static_cast<std::size_t>(t.out.width);
      std::swap_ranges(dst, dst + plane, dst + 2 * plane);
    }
    forget(index);
    return true;
  }

  // JPEGs through libjpeg directly: in training only the planned crop is decoded, and (with
  // t.scaled_decode) at the smallest scale M/8 that keeps it the output's size, in evaluation the
  // whole image at the scale the resize allows (see jpeg_region.h); the decoder writes RGB, so no
  // channel swap either. kNotHandled for what it
  // does not handle (CMYK, corrupt data), which then goes the OpenCV way and fails there if it
  // must. Draws the same random numbers as the OpenCV path; the loader seeds each sample's stream,
  // so what a failed attempt drew cannot shift any other sample.
  JpegOutcome load_jpeg(const std::vector<std::uint8_t>& encoded, const Transform& t,
                        std::mt19937& rng, std::uint8_t* dst) const {
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
    JpegRegion region;
    const JpegOutcome outcome =
        decode_jpeg_window(encoded.data(), encoded.size(), t.out.channels == 1 ? 1 : 3, max_pixels_,
                           choose, pixels, &region);
    if (outcome == JpegOutcome::kDecoded) {
      decode_scales_[static_cast<std::size_t>(region.scale - 1)].fetch_add(
          1, std::memory_order_relaxed);
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
        transform_interleaved(region.pixels, region.image_height, region.image_width,
                              region.channels, region.row_stride, t, rng, dst);
      }
    }
    trim(pixels);
    return outcome;
  }

  // Records why the file could not be loaded, for the loader's count and the trainer's report.
  bool fail(std::int64_t index, SkipReason reason, std::string detail) const {
    std::lock_guard<std::mutex> lock(failed_mutex_);
    failed_[index] =
        SkippedFile{index, files_[static_cast<std::size_t>(index)].path, reason, std::move(detail)};
    any_failed_.store(true, std::memory_order_relaxed);
    return false;
  }
  // A file that failed once and loads now (put back during the run) is no longer reported. The
  // flag spares good data sets a lock per sample.
  void forget(std::int64_t index) const {
    if (!any_failed_.load(std::memory_order_relaxed)) return;
    std::lock_guard<std::mutex> lock(failed_mutex_);
    failed_.erase(index);
  }

  std::vector<std::string> class_names_;
  mutable std::mutex failed_mutex_;
  mutable std::map<std::int64_t, SkippedFile> failed_;
  mutable std::atomic<bool> any_failed_{false};
  mutable std::array<std::atomic<std::int64_t>, 8> decode_scales_{};
  std::vector<LabelledFile> files_;
  int num_classes_;
  std::string description_;
  std::int64_t max_pixels_;
  std::uint64_t max_bytes_;
};

}  // namespace
#endif

std::unique_ptr<SampleSource> make_file_list_source(std::vector<LabelledFile> files,
                                                    const std::string& origin,
                                                    const std::string& kind,
                                                    const ImageFileOptions& options,
                                                    std::vector<std::string> class_names) {
#if DL_HAVE_OPENCV
  std::int64_t max_label = 0;
  for (const LabelledFile& f : files) max_label = std::max(max_label, f.label);
  const int num_classes =
      std::max(static_cast<int>(max_label + 1), static_cast<int>(class_names.size()));
  if (class_names.size() != static_cast<std::size_t>(num_classes)) class_names.clear();
  std::string description = kind + " " + origin + " (" + std::to_string(files.size()) +
                            " samples, " + std::to_string(num_classes) + " classes)";
  return std::make_unique<FileListSource>(std::move(files), num_classes, std::move(description),
                                          options.max_pixels, std::move(class_names));
#else
  (void)files;
  (void)options;
  (void)class_names;
  throw DataError(origin + ": reading " + kind +
                  " image files needs OpenCV, and this build has none (reconfigure with "
                  "libopencv-dev installed; IDX and CIFAR data sets work without it)");
#endif
}

}  // namespace dl::data
