// A data set's part and the loader over it, for the Python module (see dataset_loader.h).
#include "loader_module/dataset_loader.h"

#include <stdexcept>
#include <utility>

#include "data/data_error.h"
#include "data/transform.h"
#include "loader_module/batch_convert.h"

namespace dl::loader_module {
namespace {

std::unique_ptr<data::SampleSource> take_part(data::DataSet& set, const std::string& split,
                                              const std::string& location) {
  if (split == "train") return std::move(set.train);
  if (split == "val") {
    if (!set.val) {
      throw MissingPart(
          "data " + data::printable_path(location) + ": split 'val': this " + set.kind +
          " has no validation part of its own (no val/ folder); take split 'train' with indices "
          "for a held-out part");
    }
    return std::move(set.val);
  }
  throw std::invalid_argument("split '" + split + "': expected 'train' or 'val'");
}

void check_order(const std::vector<std::int64_t>& order, std::int64_t size) {
  for (const std::int64_t i : order) {
    if (i < 0 || i >= size) {
      throw std::invalid_argument("index " + std::to_string(i) + " is outside the data set's " +
                                  std::to_string(size) + " samples");
    }
  }
}

}  // namespace

DatasetLoader::DatasetLoader(DatasetLoaderOptions options) {
  if (options.batch_size < 1 || options.workers < 0 || options.prefetch_per_worker < 1) {
    throw std::invalid_argument("batch_size " + std::to_string(options.batch_size) + ", workers " +
                                std::to_string(options.workers) + ", prefetch " +
                                std::to_string(options.prefetch_per_worker) +
                                ": expected at least 1, 0 and 1");
  }
  if (options.image_size < 0) {
    throw std::invalid_argument("image_size " + std::to_string(options.image_size) +
                                ": expected a positive size, or 0 for the data set's default");
  }
  data::ImageFileOptions files;
  files.max_pixels = options.max_pixels;
  files.read_ahead_bytes = options.read_ahead_bytes;
  files.entropy_index_bytes = options.entropy_index_bytes;
  files.warn = options.warn;
  data::DataSet set = data::open_data_set(options.location, files);
  kind_ = set.kind;
  files_ = set.files();
  source_ = take_part(set, options.split, options.location);

  // As dl-train's data setup: photographs become 3 x 224 x 224, small sets keep their shape.
  const data::ImageShape native = source_->native_shape();
  const int size = options.image_size > 0 ? options.image_size : files_ ? 224 : native.height;
  transform_.out = {files_ ? 3 : native.channels, size, size};
  transform_.train = files_ && options.augment;
  transform_.scale_min = options.scale_min;
  transform_.scale_max = options.scale_max;
  transform_.ratio_min = options.ratio_min;
  transform_.ratio_max = options.ratio_max;
  transform_.flip_probability = options.flip_probability;
  transform_.eval_crop_fraction = options.eval_crop_fraction;
  transform_.scaled_decode = options.scaled_decode;

  options_ = std::move(options);
}

void DatasetLoader::prepare(std::vector<std::int64_t> first_order, FloatOutput output) {
  if (loader_) throw std::logic_error("the loader is prepared already");
  check_order(first_order, source_->size());
  order_ = std::move(first_order);
  epoch_size_ = order_.size();
  data::LoaderConfig config;
  config.batch_size = options_.batch_size;
  config.workers = options_.workers;
  config.prefetch_per_worker = options_.prefetch_per_worker;
  config.drop_last = options_.drop_last;
  config.seed = options_.seed;
  config.transform = transform_;
  config.order = [this](int) { return order_; };
  config.allocate = options_.allocate;
  config.release = options_.release;
  config.poll = options_.poll;
  if (output.on) {
    const data::ImageShape shape = transform_.out;
    float_pool_ = data::BufferPool::create(
        static_cast<std::size_t>(options_.batch_size) * shape.bytes() * sizeof(float),
        options_.allocate, options_.release);
    config.finish = [pool = float_pool_, shape, output](data::Batch& batch) {
      data::BufferLease floats = pool->acquire();
      normalize_batch(batch.images(), batch.n(), shape, output.mean, output.std,
                      output.channels_last, static_cast<float*>(floats.get()));
      batch.attach(std::move(floats));
    };
  }
  loader_ = std::make_unique<data::Loader>(*source_, std::move(config));
}

data::Loader& DatasetLoader::loaded() const {
  if (!loader_) throw std::logic_error("the loader is used before prepare()");
  return *loader_;
}

DatasetLoader::~DatasetLoader() = default;

void DatasetLoader::start_epoch(int epoch, std::vector<std::int64_t> order) {
  data::Loader& loader = loaded();
  if (order.size() != epoch_size_) {
    throw std::invalid_argument("epoch " + std::to_string(epoch) + " has " +
                                std::to_string(order.size()) + " indices; every epoch must have " +
                                std::to_string(epoch_size_) + ", as the first");
  }
  check_order(order, source_->size());
  order_ = std::move(order);
  loader.start_epoch(epoch);
}

data::ChannelStats DatasetLoader::stats() const {
  if (files_) {
    return data::kImageNetStats;
  }
  data::Transform eval = transform_;
  eval.train = false;
  return data::measure_channel_stats(*source_, eval);
}

}  // namespace dl::loader_module
