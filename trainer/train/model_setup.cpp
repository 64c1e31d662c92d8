// Model, optimizer and scaler settings from the configuration (see model_setup.h).
#include "train/model_setup.h"

#include <stdexcept>

#include "core/errors.h"

namespace dl::train {

model::ModelSpec model_spec(const TrainConfig& config, const DataSetup& data) {
  model::ModelSpec spec;
  spec.name = config.model;
  spec.in_channels = data.train_transform.out.channels;
  spec.num_classes = data.train->num_classes();
  spec.input_size = data.train_transform.out.height;
  return spec;
}

model::ModelInfo describe_model(const model::ModelSpec& spec, const DataSetup& data) {
  model::ModelInfo info;
  info.name = spec.name;
  info.in_channels = spec.in_channels;
  info.image_size = spec.input_size;
  info.num_classes = spec.num_classes;
  info.data_kind = data.kind;
  for (int c = 0; c < spec.in_channels && c < 3; ++c) {
    info.mean.push_back(data.mean[static_cast<std::size_t>(c)]);
    info.std.push_back(data.std[static_cast<std::size_t>(c)]);
  }
  return info;
}

std::unique_ptr<model::Model> build_model(const model::ModelSpec& spec, c10::Device device) {
  std::unique_ptr<model::Model> net;
  try {
    net = model::make_model(spec);
  } catch (const std::invalid_argument& e) {
    throw UserError(exit_code::kUsage, e.what());
  }
  net->to(device);
  return net;
}

torch::optim::AdamWOptions adamw_options(const TrainConfig& config) {
  return torch::optim::AdamWOptions(config.lr).weight_decay(config.weight_decay);
}

ScalerOptions scaler_options(const TrainConfig& config, Precision precision) {
  ScalerOptions o;
  o.enabled = uses_scaler(precision);
  o.init_scale = config.loss_scale;
  o.growth_factor = config.loss_scale_growth;
  o.backoff_factor = config.loss_scale_backoff;
  o.growth_interval = config.loss_scale_interval;
  return o;
}

}  // namespace dl::train
