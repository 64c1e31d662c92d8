// Image files decoded with OpenCV (see file_list_source.h). A file that is missing or does not
// decode is not an error here: load() returns false and the loader skips and counts it, as one bad
// JPEG in a million should not end a training run.
#include "data/file_list_source.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "data/data_error.h"

#if DL_HAVE_OPENCV
#include "data/file_bytes.h"
#include "data/image_decode.h"
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

class FileListSource : public SampleSource {
 public:
  FileListSource(std::vector<LabelledFile> files, int num_classes, std::string description,
                 std::int64_t max_pixels, std::vector<std::string> class_names,
                 std::size_t entropy_index_bytes)
      : class_names_(std::move(class_names)),
        files_(std::move(files)),
        num_classes_(num_classes),
        description_(std::move(description)),
        max_pixels_(max_pixels),
        max_bytes_(static_cast<std::uint64_t>(max_pixels) * 8 + (std::uint64_t{64} << 20)),
        entropy_index_(static_cast<std::int64_t>(files_.size()), entropy_index_bytes) {}

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

  bool encoded_file(std::int64_t index, std::vector<std::uint8_t>& bytes,
                    std::string* extension) const override {
    const std::string& path = files_[static_cast<std::size_t>(index)].path;
    if (!read_file_into(path, bytes, nullptr, max_bytes_) || bytes.empty()) return false;
    const std::size_t slash = path.rfind('/');
    const std::size_t dot = path.rfind('.');
    std::string ext = dot == std::string::npos || (slash != std::string::npos && dot < slash)
                          ? ""
                          : path.substr(dot + 1);
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    *extension = ext;
    return true;
  }

  SkipReason skip_reason(std::int64_t index) const override {
    std::lock_guard<std::mutex> lock(failed_mutex_);
    const auto it = failed_.find(index);
    return it == failed_.end() ? SkipReason::kUndecodable : it->second.reason;
  }

  DecodeScales decode_scales() const override { return read_scale_counters(decode_scales_); }
  std::size_t entropy_index_bytes() const override { return entropy_index_.bytes(); }

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
    DecodeFailure failure;
    EntropyLease lease(&entropy_index_, index);
    if (!decode_image(encoded.data(), encoded.size(), t, rng, max_pixels_, dst, &failure,
                      &decode_scales_, &lease)) {
      return fail(index, failure.reason, std::move(failure.detail));
    }
    forget(index);
    return true;
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
  mutable ScaleCounters decode_scales_{};
  std::vector<LabelledFile> files_;
  int num_classes_;
  std::string description_;
  std::int64_t max_pixels_;
  std::uint64_t max_bytes_;
  // Where each JPEG's Huffman decoding can resume (jpeg_entropy.h), kept across epochs.
  mutable EntropyIndexStore entropy_index_;
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
                                          options.max_pixels, std::move(class_names),
                                          options.entropy_index_bytes);
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
