// Model, optimizer and scaler settings from the configuration (see model_setup.h).
#include "train/run/model_setup.h"

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <stdexcept>

#include "core/errors.h"
#include "model/freeze.h"
#include "model/init_from.h"

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

void init_from_weights(model::Model& net, const model::WeightsFile& weights,
                       const std::string& path, bool log) {
  const std::string source =
      weights.found_under.empty() ? path : path + " (its '" + weights.found_under + "')";
  const model::InitReport report = model::init_from(net, weights.tensors, source);
  if (!log) return;
  for (const std::string& line : model::describe(report, source)) spdlog::info("{}", line);
}

void freeze_modules(model::Model& net, const std::string& setting, bool log) {
  std::vector<std::string> modules;
  try {
    modules = model::modules_to_freeze(net, setting);
  } catch (const std::invalid_argument& e) {
    throw UserError(exit_code::kUsage, e.what());
  }
  if (modules.empty()) return;
  std::int64_t before = 0, after = 0;
  for (const auto& p : net.parameters()) before += p.numel();
  net.freeze(modules);
  const std::vector<at::Tensor> trainable = net.parameters();
  for (const auto& p : trainable) after += p.numel();
  if (!log) return;
  // Named by their top-level modules: "layer1", not each of its blocks' convolutions.
  std::vector<std::string> tops;
  for (const std::string& m : modules) {
    const std::string top = m.substr(0, m.find('.'));
    if (std::find(tops.begin(), tops.end(), top) == tops.end()) tops.push_back(top);
  }
  spdlog::info(
      "freeze {}: {} of {} parameter values fixed, with their BatchNorm statistics, in "
      "{}; {} values train",
      // Joined first: fmt 7 (spdlog 1.8) refuses a join view passed on by reference.
      setting, before - after, before, fmt::format("{}", fmt::join(tops, ", ")), after);
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
