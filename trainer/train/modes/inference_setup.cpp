// Device, precision, threads and workers for evaluate and predict (inference_setup.h).
#include "train/modes/inference_setup.h"

#include <spdlog/spdlog.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <array>

#include "train/run/device.h"
#include "train/run/pipeline_tuner.h"

namespace dl::train {

Inference start_inference(const TrainConfig& config, const model::ModelInfo& info) {
  Inference inference;
  inference.device = choose_device(config.device);
  inference.precision =
      resolve_precision(config.precision, config.precision_source, inference.device);
  const int cores = usable_cores();
  // Unplanned, decoding and the forward pass share the cores, as the pipeline plan's rule of
  // thumb does; dl-launch's plan (DL_WORKERS, DL_THREADS) is used as given.
  torch::set_num_threads(config.threads > 0 ? config.threads : std::max(1, cores));
  inference.workers = config.workers >= 0 ? config.workers : std::clamp(cores - 1, 0, 8);
  if (!inference.precision.warning.empty()) {
    spdlog::warn("precision: {}", inference.precision.warning);
  }
  std::array<float, 3> mean{0.5f, 0.5f, 0.5f}, std{0.5f, 0.5f, 0.5f};
  for (std::size_t c = 0; c < 3; ++c) {
    // A grey model's statistics stand for every channel a conversion might make.
    const std::size_t from_mean = std::min(c, info.mean.size() - 1);
    const std::size_t from_std = std::min(c, info.std.size() - 1);
    if (!info.mean.empty()) mean[c] = static_cast<float>(info.mean[from_mean]);
    if (!info.std.empty()) std[c] = static_cast<float>(info.std[from_std]);
  }
  inference.feed =
      std::make_unique<DeviceFeed>(inference.device, static_cast<int>(info.in_channels), mean, std);
  return inference;
}

data::LoaderConfig inference_loader(Inference& inference, const data::Transform& transform,
                                    int batch_size) {
  data::LoaderConfig c;
  c.allocate = inference.feed->allocator();
  c.release = inference.feed->releaser();
  c.batch_size = batch_size;
  c.workers = inference.workers;
  c.shuffle = false;
  c.drop_last = false;
  c.transform = transform;
  return c;
}

}  // namespace dl::train
