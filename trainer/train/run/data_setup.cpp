// Data discovery and split.
#include "train/run/data_setup.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/data_location.h"
#include "core/errors.h"
#include "core/text.h"
#include "data/channel_stats.h"
#include "data/data_error.h"
#include "data/data_set.h"
#include "data/epoch_order.h"
#include "train/run/subset.h"

namespace dl::train {
namespace {

void split_if_needed(DataSetup* d, std::unique_ptr<data::SampleSource> all,
                     const TrainConfig& config) {
  auto [train, val] = hold_out(std::shared_ptr<const data::SampleSource>(std::move(all)),
                               config.val_fraction, config.seed);
  d->train = std::move(train);
  d->val = std::move(val);
}

std::string resolve_location(const TrainConfig& config) {
  // A given location is checked by open_data_set (MissingData, exit 66): a shard pattern
  // (train-{000000..000146}.tar) names files that are not at the location itself.
  if (!config.data.empty()) return config.data;
  if (holds_data_set("data")) return "data";
  const std::string fallback = default_data_dir();
  if (fallback.empty()) {
    throw UserError(exit_code::kMissing,
                    "no data: the workspace has no data/ and the default Fashion-MNIST is not "
                    "installed (set --data, or install dataset-fashion-mnist)");
  }
  return fallback;
}

}  // namespace

std::size_t first_held_out_shard(const std::vector<std::int64_t>& counts, double fraction) {
  // The last shards, at least one and at most all but one, until `fraction` is held out.
  const double total =
      static_cast<double>(std::accumulate(counts.begin(), counts.end(), std::int64_t{0}));
  std::size_t first_val = counts.size() - 1;
  std::int64_t held = counts.back();
  while (first_val > 1 && static_cast<double>(held) < fraction * total) {
    held += counts[--first_val];
  }
  return first_val;
}

std::pair<std::unique_ptr<data::SampleSource>, std::unique_ptr<data::SampleSource>> hold_out(
    std::shared_ptr<const data::SampleSource> base, double fraction, std::uint64_t seed) {
  const std::vector<std::int64_t> counts = base->shard_counts();
  if (counts.size() >= 2 && fraction > 0) {
    const std::int64_t total = base->size();
    const std::size_t first_val = first_held_out_shard(counts, fraction);
    const std::int64_t held = std::accumulate(
        counts.begin() + static_cast<std::ptrdiff_t>(first_val), counts.end(), std::int64_t{0});
    const std::int64_t boundary = total - held;
    std::vector<std::int64_t> train(static_cast<std::size_t>(boundary));
    std::iota(train.begin(), train.end(), std::int64_t{0});
    std::vector<std::int64_t> val(static_cast<std::size_t>(held));
    std::iota(val.begin(), val.end(), boundary);
    const auto split = counts.begin() + static_cast<std::ptrdiff_t>(first_val);
    return {std::make_unique<Subset>(base, std::move(train), "training shards",
                                     std::vector<std::int64_t>(counts.begin(), split)),
            std::make_unique<Subset>(base, std::move(val), "held-out shards",
                                     std::vector<std::int64_t>(split, counts.end()))};
  }
  const auto order = data::epoch_order(base->size(), true, seed ^ 0x5EEDF00Dull, 0);
  auto held = static_cast<std::size_t>(std::llround(fraction * static_cast<double>(order.size())));
  held = std::min(held, order.size() > 0 ? order.size() - 1 : 0);
  std::vector<std::int64_t> val(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(held));
  std::vector<std::int64_t> train(order.begin() + static_cast<std::ptrdiff_t>(held), order.end());
  std::sort(val.begin(), val.end());  // validation in file order, as a test split would be
  return {std::make_unique<Subset>(base, std::move(train), "training part"),
          std::make_unique<Subset>(base, std::move(val), "held-out part")};
}

DataSetup setup_data(const TrainConfig& config) {
  DataSetup d;
  d.location = resolve_location(config);
  data::ImageFileOptions image_files;
  image_files.max_pixels = config.max_image_pixels;
  image_files.read_ahead_bytes = static_cast<std::uint64_t>(config.read_ahead_mb) << 20;
  image_files.entropy_index_bytes = static_cast<std::size_t>(config.jpeg_index_mb) << 20;
  image_files.warn = [](const std::string& line) { spdlog::warn("{}", line); };
  try {
    data::DataSet set = data::open_data_set(d.location, image_files);
    d.kind = set.kind;
    if (set.val) {
      d.train = std::move(set.train);
      d.val = std::move(set.val);
    } else {
      split_if_needed(&d, std::move(set.train), config);
    }
  } catch (const data::MissingData& e) {
    throw UserError(exit_code::kMissing, e.what());
  } catch (const data::DataError& e) {
    throw UserError(exit_code::kBadData, e.what());
  }
  if (d.train->size() == 0) {
    throw UserError(exit_code::kBadData, "data " + d.location + ": the training set is empty");
  }
  if (d.val->num_classes() > d.train->num_classes()) {
    throw UserError(exit_code::kBadData, "data " + d.location + ": validation labels go up to " +
                                             std::to_string(d.val->num_classes() - 1) +
                                             " but training has " +
                                             std::to_string(d.train->num_classes()) + " classes");
  }

  const data::ImageShape native = d.train->native_shape();
  const bool files = d.kind == "image-folder" || d.kind == "csv" || d.kind == "shards";
  const int default_size = files ? 224 : native.height;
  const int size = config.image_size > 0 ? config.image_size : default_size;
  const int channels = files ? 3 : native.channels;
  d.eval_transform.out = {channels, size, size};
  d.eval_transform.train = false;
  d.train_transform = d.eval_transform;
  // Augment photographs (RandomResizedCrop + flip, as torchvision's ImageNet recipe); small
  // in-memory sets train on the images as they are, as the tutorial's reference does.
  d.train_transform.train = files;
  const data::ChannelStats stats =
      files ? data::kImageNetStats : data::measure_channel_stats(*d.train, d.eval_transform);
  d.mean = stats.mean;
  d.std = stats.std;
  return d;
}

}  // namespace dl::train
