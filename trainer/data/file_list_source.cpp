// Image files decoded with OpenCV (see file_list_source.h). A file that is missing or does not
// decode is not an error here: load() returns false and the loader skips and counts it, as one bad
// JPEG in a million should not end a training run.
#include "data/file_list_source.h"

#include <algorithm>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "data/data_error.h"

#if DL_HAVE_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "data/crop_plan.h"
#include "data/file_bytes.h"
#include "data/jpeg_region.h"
#include "data/transform.h"
#endif

namespace dl::data {

#if DL_HAVE_OPENCV
namespace {

class FileListSource : public SampleSource {
 public:
  FileListSource(std::vector<LabelledFile> files, int num_classes, std::string description)
      : files_(std::move(files)), num_classes_(num_classes), description_(std::move(description)) {}

  std::int64_t size() const override { return static_cast<std::int64_t>(files_.size()); }
  int num_classes() const override { return num_classes_; }
  // Decoded files are RGB; their sizes vary.
  ImageShape native_shape() const override { return ImageShape{3, 0, 0}; }
  std::int64_t label(std::int64_t index) const override {
    return files_[static_cast<std::size_t>(index)].label;
  }
  std::string describe() const override { return description_; }

  bool load(std::int64_t index, const Transform& t, std::mt19937& rng,
            std::uint8_t* dst) const override {
    thread_local std::vector<std::uint8_t> encoded;
    if (!read_file_into(files_[static_cast<std::size_t>(index)].path, encoded) || encoded.empty()) {
      return fail(index);
    }
    const bool grey = t.out.channels == 1;
    if (looks_like_jpeg(encoded.data(), encoded.size()) && jpeg_region_available() &&
        load_jpeg(encoded, t, rng, dst)) {
      return true;
    }
    // IMREAD_COLOR drops alpha and expands grey to 3 channels; EXIF orientation is ignored because
    // PIL, and so torchvision's reference pipeline, ignores it too.
    const int flags =
        (grey ? cv::IMREAD_GRAYSCALE : cv::IMREAD_COLOR) | cv::IMREAD_IGNORE_ORIENTATION;
    cv::Mat image;
    try {
      image = cv::imdecode(cv::Mat(1, static_cast<int>(encoded.size()), CV_8UC1, encoded.data()),
                           flags);
    } catch (const cv::Exception&) {
      return fail(index);
    }
    if (image.empty() || image.depth() != CV_8U) return fail(index);
    transform_interleaved(image.data, image.rows, image.cols, image.channels(), image.step[0], t,
                          rng, dst);
    if (!grey && t.out.channels == 3) {
      // OpenCV decodes BGR. The transform works per channel, so swapping the finished B and R
      // planes equals converting first, at the cost of the (smaller) output, not the input.
      const std::size_t plane =
          static_cast<std::size_t>(t.out.height) * static_cast<std::size_t>(t.out.width);
      std::swap_ranges(dst, dst + plane, dst + 2 * plane);
    }
    return true;
  }

  // JPEGs through libjpeg directly: in training only the planned crop is decoded (see
  // jpeg_region.h), and the decoder writes RGB, so no channel swap either. False for what it does
  // not handle (CMYK, corrupt data), which then goes the OpenCV way and fails there if it must.
  // Draws the same random numbers as the OpenCV path; the loader seeds each sample's stream, so
  // what a failed attempt drew cannot shift any other sample.
  static bool load_jpeg(const std::vector<std::uint8_t>& encoded, const Transform& t,
                        std::mt19937& rng, std::uint8_t* dst) {
    thread_local std::vector<std::uint8_t> pixels;
    TrainCrop crop;
    // One pointer captured, so std::function keeps it inline: no allocation per sample.
    struct Planner {
      const Transform& t;
      std::mt19937& rng;
      TrainCrop& crop;
    } planner{t, rng, crop};
    auto choose = [p = &planner](int height, int width) {
      if (!p->t.train) return Window{0, 0, height, width};
      p->crop = plan_train_crop(height, width, p->t, p->rng);
      return Window{p->crop.top, p->crop.left, p->crop.height, p->crop.width};
    };
    JpegRegion region;
    if (!decode_jpeg_window(encoded.data(), encoded.size(), t.out.channels == 1 ? 1 : 3, choose,
                            pixels, &region)) {
      return false;
    }
    if (t.train) {
      transform_planned_crop(region.pixels, region.row_stride, region.channels, crop, t, dst);
    } else {
      transform_interleaved(region.pixels, region.image_height, region.image_width, region.channels,
                            region.row_stride, t, rng, dst);
    }
    return true;
  }

  std::vector<std::string> failures() const override {
    std::lock_guard<std::mutex> lock(failed_mutex_);
    return {failed_.begin(), failed_.end()};
  }

 private:
  // Records the file that could not be read or decoded, for the trainer's report.
  bool fail(std::int64_t index) const {
    std::lock_guard<std::mutex> lock(failed_mutex_);
    failed_.insert(files_[static_cast<std::size_t>(index)].path);
    return false;
  }
  mutable std::mutex failed_mutex_;
  mutable std::set<std::string> failed_;
  std::vector<LabelledFile> files_;
  int num_classes_;
  std::string description_;
};

}  // namespace
#endif

std::unique_ptr<SampleSource> make_file_list_source(std::vector<LabelledFile> files,
                                                    const std::string& origin,
                                                    const std::string& kind) {
#if DL_HAVE_OPENCV
  std::int64_t max_label = 0;
  for (const LabelledFile& f : files) max_label = std::max(max_label, f.label);
  const int num_classes = static_cast<int>(max_label + 1);
  std::string description = kind + " " + origin + " (" + std::to_string(files.size()) +
                            " samples, " + std::to_string(num_classes) + " classes)";
  return std::make_unique<FileListSource>(std::move(files), num_classes, std::move(description));
#else
  (void)files;
  throw DataError(origin + ": reading " + kind +
                  " image files needs OpenCV, and this build has none (reconfigure with "
                  "libopencv-dev installed; IDX and CIFAR data sets work without it)");
#endif
}

}  // namespace dl::data
