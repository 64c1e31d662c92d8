// The model, optimizer and loss-scaler settings as training, the probe mode and the worker/thread
// measurement all build them, so the three run the same model with the same optimizer.
#pragma once

#include <c10/core/Device.h>
#include <torch/optim/adamw.h>

#include <memory>

#include "model/checkpoint.h"
#include "model/model.h"
#include "model/weights_file.h"
#include "train/amp/grad_scaler.h"
#include "train/amp/precision.h"
#include "train/run/config.h"
#include "train/run/data_setup.h"

namespace dl::train {

// The configured model for the data's input shape and class count.
model::ModelSpec model_spec(const TrainConfig& config, const DataSetup& data);

// What a checkpoint records to rebuild the model and its input (checkpoint.h's ModelInfo).
model::ModelInfo describe_model(const model::ModelSpec& spec, const DataSetup& data);

// make_model on `device`; an unknown model name is a UserError (exit 64) naming it.
std::unique_ptr<model::Model> build_model(const model::ModelSpec& spec, c10::Device device);

// --init-from: `weights` (read from `path`) into `net` (init_from.h); UserError 76 when they do
// not fit it. `log`: the summary is logged (rank 0 logs, the other ranks load silently).
void init_from_weights(model::Model& net, const model::WeightsFile& weights,
                       const std::string& path, bool log);

// --freeze `setting` on `net` (freeze.h), before the optimizer takes net.parameters(): the frozen
// parameters are not the optimizer's, so neither gradients nor weight decay move them.
void freeze_modules(model::Model& net, const std::string& setting, bool log);

// AdamW with the configured learning rate and weight decay.
torch::optim::AdamWOptions adamw_options(const TrainConfig& config);

// The GradScaler's settings: on for fp16 only, the configured scale and its schedule.
ScalerOptions scaler_options(const TrainConfig& config, Precision precision);

}  // namespace dl::train
