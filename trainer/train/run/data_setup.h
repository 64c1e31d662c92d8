// From the `data` setting to the training and validation sources, their transforms and the
// normalisation statistics: MNIST/Fashion-MNIST IDX, CIFAR-10 binaries, an ImageFolder tree (with
// or without val/), a CSV manifest, the workspace's data/ folder, or the default Fashion-MNIST.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/sample_source.h"
#include "train/run/config.h"

namespace dl::train {

struct DataSetup {
  std::unique_ptr<data::SampleSource> train;
  std::unique_ptr<data::SampleSource> val;
  data::Transform train_transform;
  data::Transform eval_transform;
  std::array<float, 3> mean{};  // per channel, on the 0..1 scale
  std::array<float, 3> std{};
  std::string kind;  // "idx", "cifar10", "image-folder", "csv"
  std::string location;
};

// Shards without a validation part of their own: the index of the first of the last shards held
// out for validation (at least one, at most all but one, until `fraction` of the samples).
// `counts` holds two or more shards' sample counts.
std::size_t first_held_out_shard(const std::vector<std::int64_t>& counts, double fraction);

// Throws UserError: 66 when the data is not there, 65 when it is malformed (DataError's message).
DataSetup setup_data(const TrainConfig& config);

}  // namespace dl::train
