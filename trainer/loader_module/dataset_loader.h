// What the Python module dl_loader drives: a data set opened as dl-train opens it (data_set.h),
// one of its parts, the transform dl-train would apply, and the prefetching loader over it, with
// each epoch's order handed in by the caller (the Python side's sampler: torch's RandomSampler
// or DistributedSampler order, a Subset's indices). No Python here, so that it is tested in C++.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "data/batch.h"
#include "data/buffer_pool.h"
#include "data/channel_stats.h"
#include "data/data_set.h"
#include "data/loader.h"
#include "data/sample_source.h"

namespace dl::loader_module {

// The part asked for is not in the data set (split 'val' of class folders without val/).
class MissingPart : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct DatasetLoaderOptions {
  std::string location;         // what dl-train's --data takes
  std::string split = "train";  // "train" or "val": the data set's part
  // Augment (RandomResizedCrop + flip) rather than resize + centre crop. Images from files only:
  // in-memory sets (IDX, CIFAR) are used as they are, as dl-train does.
  bool augment = true;
  int image_size = 0;  // 0: 224 for image files, the native size otherwise
  int batch_size = 1;
  int workers = 0;
  int prefetch_per_worker = 2;
  bool drop_last = false;
  std::uint64_t seed = 0;
  std::int64_t max_pixels = data::kDefaultMaxImagePixels;
  std::uint64_t read_ahead_bytes = std::uint64_t{1} << 30;            // remote shards
  std::size_t entropy_index_bytes = data::kDefaultEntropyIndexBytes;  // data::ImageFileOptions
  // RandomResizedCrop's scale and ratio ranges, the flip's probability, validation's crop
  // fraction (224 of 256): data::Transform's defaults, which are torchvision's.
  float scale_min = 0.08f;
  float scale_max = 1.0f;
  float ratio_min = 3.0f / 4.0f;
  float ratio_max = 4.0f / 3.0f;
  float flip_probability = 0.5f;
  float eval_crop_fraction = 0.875f;
  bool scaled_decode = true;  // data::Transform::scaled_decode: JPEGs decoded at the scale needed
  data::AllocateFn allocate;
  data::ReleaseFn release;
  std::function<void()> poll;  // LoaderConfig::poll
  std::function<void(const std::string&)> warn;
};

// The batch as normalised float32 (batch_convert.h), made by the worker that assembled it.
struct FloatOutput {
  bool on = false;
  std::array<float, 3> mean{};
  std::array<float, 3> std{};
  bool channels_last = false;
};

class DatasetLoader {
 public:
  // Opens the data set's part. Throws data::MissingData, data::DataError (bad data),
  // MissingPart or std::invalid_argument (bad options), each one line.
  explicit DatasetLoader(DatasetLoaderOptions options);
  ~DatasetLoader();
  DatasetLoader(const DatasetLoader&) = delete;
  DatasetLoader& operator=(const DatasetLoader&) = delete;

  // Starts the loader's workers for epochs of `first_order`'s length (the first epoch's sample
  // indices, each below size(): the sampler needs the part's size first), each batch also as
  // `output` says (its floats in Batch::extra()). Once, before the rest.
  void prepare(std::vector<std::int64_t> first_order, FloatOutput output = {});
  // Begins `epoch` over `order` (as many indices as the first epoch's).
  void start_epoch(int epoch, std::vector<std::int64_t> order);
  std::optional<data::Batch> next() { return loaded().next(); }

  std::int64_t size() const { return source_->size(); }  // samples in the part
  std::int64_t batches_per_epoch() const { return loaded().batches_per_epoch(); }
  std::int64_t samples_per_epoch() const { return static_cast<std::int64_t>(epoch_size_); }
  const data::Transform& transform() const { return transform_; }
  // The statistics normalisation uses: ImageNet's for image files, measured for in-memory sets.
  data::ChannelStats stats() const;
  std::vector<std::string> class_names() const { return source_->class_names(); }
  std::int64_t label(std::int64_t index) const { return source_->label(index); }
  const std::string& kind() const { return kind_; }
  std::string describe() const { return source_->describe(); }
  std::vector<std::int64_t> shard_counts() const { return source_->shard_counts(); }
  std::string remote_summary() const { return source_->remote_summary(); }
  std::vector<data::SkippedFile> failures() const { return source_->failures(); }
  data::DecodeScales decode_scales() const { return source_->decode_scales(); }
  std::size_t entropy_index_bytes() const { return source_->entropy_index_bytes(); }
  std::size_t pool_buffers() const { return loaded().pool_buffers(); }
  // The float output's blocks so far and their size (0 without a float output).
  std::size_t float_buffers() const { return float_pool_ ? float_pool_->allocated() : 0; }
  std::size_t float_buffer_bytes() const { return float_pool_ ? float_pool_->block_bytes() : 0; }

 private:
  data::Loader& loaded() const;

  DatasetLoaderOptions options_;
  std::string kind_;
  bool files_ = false;  // data::DataSet::files(): image files, 3 channels out
  std::unique_ptr<data::SampleSource> source_;
  data::Transform transform_;
  std::size_t epoch_size_ = 0;
  std::vector<std::int64_t> order_;  // the order the loader asks for at start_epoch()
  std::shared_ptr<data::BufferPool> float_pool_;
  std::unique_ptr<data::Loader> loader_;
};

}  // namespace dl::loader_module
