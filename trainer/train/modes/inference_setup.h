// What evaluate and predict share with validation: the device and precision chosen as training
// chooses them, compute threads and loader workers (the plan's, else from the usable cores), the
// device feed normalising with the checkpoint's statistics, and a loader configuration in
// evaluation order.
#pragma once

#include <c10/core/Device.h>

#include <memory>

#include "data/loader.h"
#include "model/checkpoint.h"
#include "train/amp/precision.h"
#include "train/run/config.h"
#include "train/run/device_feed.h"

namespace dl::train {

struct Inference {
  c10::Device device = c10::Device(c10::kCPU);
  PrecisionChoice precision;
  int workers = 0;
  std::unique_ptr<DeviceFeed> feed;
};

// Throws UserError for a device or precision that cannot work (as training does).
Inference start_inference(const TrainConfig& config, const model::ModelInfo& info);

// The loader settings for `transform`: no shuffling, nothing dropped, the feed's memory.
data::LoaderConfig inference_loader(Inference& inference, const data::Transform& transform,
                                    int batch_size);

}  // namespace dl::train
