// Data discovery and split.
#include "train/data_setup.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "core/data_location.h"
#include "core/errors.h"
#include "core/text.h"
#include "data/cifar.h"
#include "data/csv_manifest.h"
#include "data/data_error.h"
#include "data/epoch_order.h"
#include "data/idx.h"
#include "data/image_folder.h"
#include "train/subset.h"

namespace dl::train {
namespace {

bool exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

bool is_dir(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool has_idx(const std::string& dir) {
  return exists(dir + "/train-images-idx3-ubyte") || exists(dir + "/train-images-idx3-ubyte.gz");
}

// Mean and standard deviation per channel of up to 5000 samples as the evaluation transform
// yields them: in-memory sets are cheap to measure, and measured statistics fit any IDX or CIFAR
// variant (MNIST, Fashion-MNIST, KMNIST) without a table.
void measure_statistics(const data::SampleSource& source, const data::Transform& t,
                        std::array<float, 3>* mean, std::array<float, 3>* stddev) {
  const std::int64_t n = std::min<std::int64_t>(source.size(), 5000);
  const std::size_t plane = static_cast<std::size_t>(t.out.height) * t.out.width;
  std::vector<std::uint8_t> buf(t.out.bytes());
  std::array<double, 3> sum{}, sq{};
  std::mt19937 rng(0);
  std::int64_t used = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    if (!source.load(i, t, rng, buf.data())) continue;
    ++used;
    for (int c = 0; c < t.out.channels; ++c) {
      for (std::size_t p = 0; p < plane; ++p) {
        const double v = buf[static_cast<std::size_t>(c) * plane + p] / 255.0;
        sum[static_cast<std::size_t>(c)] += v;
        sq[static_cast<std::size_t>(c)] += v * v;
      }
    }
  }
  const double count =
      static_cast<double>(std::max<std::int64_t>(1, used)) * static_cast<double>(plane);
  for (std::size_t c = 0; c < 3; ++c) {
    const double m = sum[c] / count;
    (*mean)[c] = static_cast<float>(m);
    (*stddev)[c] = static_cast<float>(std::sqrt(std::max(1e-12, sq[c] / count - m * m)));
  }
}

void split_if_needed(DataSetup* d, std::unique_ptr<data::SampleSource> all,
                     const TrainConfig& config) {
  auto [train, val] = hold_out(std::shared_ptr<const data::SampleSource>(std::move(all)),
                               config.val_fraction, config.seed);
  d->train = std::move(train);
  d->val = std::move(val);
}

std::string resolve_location(const TrainConfig& config) {
  if (!config.data.empty()) {
    if (!exists(config.data)) {
      throw UserError(exit_code::kMissing, "data " + config.data +
                                               ": no such file or directory; expected an IDX or "
                                               "CIFAR-10 directory, an ImageFolder tree or a CSV "
                                               "manifest");
    }
    return config.data;
  }
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

std::pair<std::unique_ptr<data::SampleSource>, std::unique_ptr<data::SampleSource>> hold_out(
    std::shared_ptr<const data::SampleSource> base, double fraction, std::uint64_t seed) {
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
  image_files.warn = [](const std::string& line) { spdlog::warn("{}", line); };
  try {
    if (is_dir(d.location) && has_idx(d.location)) {
      d.kind = "idx";
      d.train = data::open_mnist_dir(d.location, true);
      d.val = data::open_mnist_dir(d.location, false);
    } else if (is_dir(d.location) && (exists(d.location + "/data_batch_1.bin") ||
                                      exists(d.location + "/cifar-10-batches-bin"))) {
      const std::string dir = exists(d.location + "/data_batch_1.bin")
                                  ? d.location
                                  : d.location + "/cifar-10-batches-bin";
      d.kind = "cifar10";
      d.train = data::open_cifar10(dir, true);
      d.val = data::open_cifar10(dir, false);
    } else if (is_dir(d.location)) {
      d.kind = "image-folder";
      if (is_dir(d.location + "/train")) {
        d.train = data::open_image_folder(d.location + "/train", image_files);
        if (is_dir(d.location + "/val")) {
          d.val = data::open_image_folder(d.location + "/val", image_files);
        } else {
          split_if_needed(&d, std::move(d.train), config);
        }
      } else {
        split_if_needed(&d, data::open_image_folder(d.location, image_files), config);
      }
    } else if (ends_with(d.location, ".csv")) {
      d.kind = "csv";
      split_if_needed(&d, data::open_csv_manifest(d.location, image_files), config);
    } else {
      throw UserError(exit_code::kBadData,
                      "data " + d.location +
                          ": not a data set; expected an IDX or CIFAR-10 directory, an "
                          "ImageFolder tree or a .csv manifest");
    }
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
  const bool files = d.kind == "image-folder" || d.kind == "csv";
  const int default_size = files ? 224 : native.height;
  const int size = config.image_size > 0 ? config.image_size : default_size;
  const int channels = files ? 3 : native.channels;
  d.eval_transform.out = {channels, size, size};
  d.eval_transform.train = false;
  d.train_transform = d.eval_transform;
  // Augment photographs (RandomResizedCrop + flip, as torchvision's ImageNet recipe); small
  // in-memory sets train on the images as they are, as the tutorial's reference does.
  d.train_transform.train = files;
  if (files) {
    // ImageNet's statistics, as torchvision's recipe: measuring would mean decoding thousands of
    // files before the first step.
    d.mean = {0.485f, 0.456f, 0.406f};
    d.std = {0.229f, 0.224f, 0.225f};
  } else {
    measure_statistics(*d.train, d.eval_transform, &d.mean, &d.std);
  }
  return d;
}

}  // namespace dl::train
