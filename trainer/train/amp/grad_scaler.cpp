// GradScaler: the fused ATen ops on CUDA, the same algorithm in plain tensor code elsewhere.
#include "train/amp/grad_scaler.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <torch/optim/optimizer.h>

#include <cmath>
#include <map>
#include <stdexcept>

namespace dl::train {
namespace {

// The optimizer's gradients grouped by dtype: the fused op wants one dtype per call (Python
// groups by device and dtype; everything here is on one device).
std::map<at::ScalarType, std::vector<at::Tensor>> grads_by_dtype(
    torch::optim::Optimizer& optimizer) {
  std::map<at::ScalarType, std::vector<at::Tensor>> groups;
  for (auto& group : optimizer.param_groups()) {
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      groups[p.grad().scalar_type()].push_back(p.mutable_grad());
    }
  }
  return groups;
}

}  // namespace

GradScaler::GradScaler(const ScalerOptions& options, c10::Device device, ScalerKernels kernels)
    : options_(options) {
  fused_ =
      kernels == ScalerKernels::kFused || (kernels == ScalerKernels::kAuto && device.is_cuda());
  if (!options_.enabled) return;
  if (!(options_.init_scale > 0) || !(options_.growth_factor > 0) ||
      !(options_.backoff_factor > 0) || options_.growth_interval < 1) {
    throw std::invalid_argument(
        "GradScaler: scale and factors must be positive, the growth interval at least 1");
  }
  const auto f32 = at::TensorOptions().dtype(at::kFloat).device(device);
  scale_ = at::full({1}, options_.init_scale, f32);
  growth_tracker_ = at::zeros({1}, at::TensorOptions().dtype(at::kInt).device(device));
  found_inf_ = at::zeros({1}, f32);
}

at::Tensor GradScaler::scale(const at::Tensor& loss) const {
  if (!enabled()) return loss;
  return loss * scale_;
}

void GradScaler::unscale(torch::optim::Optimizer& optimizer) {
  if (!enabled()) return;
  if (stage_ == Stage::kUnscaled) {
    throw std::logic_error("GradScaler::unscale called twice since the last update()");
  }
  if (stage_ == Stage::kStepped) {
    throw std::logic_error("GradScaler::unscale called after step()");
  }
  at::NoGradGuard no_grad;
  // As Python: 1/scale computed in double, then rounded to float once.
  const at::Tensor inv_scale = scale_.to(at::kDouble).reciprocal().to(at::kFloat);
  found_inf_.zero_();
  for (auto& [dtype, grads] : grads_by_dtype(optimizer)) {
    (void)dtype;
    if (fused_) {
      at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf_, inv_scale);
    } else {
      unscale_plain(grads, inv_scale);
    }
  }
  stage_ = Stage::kUnscaled;
}

// The fused kernel's contract: found_inf becomes 1 if any element of any gradient is not finite,
// and every gradient is multiplied by inv_scale (the non-finite ones too). No host sync here.
void GradScaler::unscale_plain(const std::vector<at::Tensor>& grads, const at::Tensor& inv_scale) {
  const at::Tensor inv = inv_scale.reshape({});  // 0-dim: broadcasts into any gradient shape
  for (const auto& g : grads) {
    const at::Tensor bad = at::logical_not(at::isfinite(g)).any().to(at::kFloat).reshape({1});
    found_inf_.copy_(at::maximum(found_inf_, bad));
    g.mul_(inv);
  }
}

bool GradScaler::step(torch::optim::Optimizer& optimizer) {
  if (!enabled()) {
    optimizer.step();
    return true;
  }
  if (stage_ == Stage::kStepped) {
    throw std::logic_error("GradScaler::step called twice since the last update()");
  }
  if (stage_ == Stage::kReady) unscale(optimizer);
  const bool skip = found_inf_.item<float>() != 0.0f;
  if (!skip) optimizer.step();
  stage_ = Stage::kStepped;
  return !skip;
}

void GradScaler::update() {
  if (!enabled()) return;
  if (stage_ == Stage::kReady) {
    throw std::logic_error("GradScaler::update called without unscale() or step() before it");
  }
  if (fused_) {
    at::_amp_update_scale_(scale_, growth_tracker_, found_inf_, options_.growth_factor,
                           options_.backoff_factor, options_.growth_interval);
  } else {
    update_plain();
  }
  stage_ = Stage::kReady;
}

// The fused kernel's arithmetic exactly: float scale times a double factor, rounded to float;
// growth is skipped (tracker still reset) when it would overflow float to inf.
void GradScaler::update_plain() {
  const float scale = scale_.item<float>();
  const std::int64_t tracker = growth_tracker_.item<std::int32_t>();
  float new_scale = scale;
  std::int64_t new_tracker = 0;
  if (found_inf_.item<float>() != 0.0f) {
    new_scale = static_cast<float>(static_cast<double>(scale) * options_.backoff_factor);
  } else if (tracker + 1 == options_.growth_interval) {
    const float grown = static_cast<float>(static_cast<double>(scale) * options_.growth_factor);
    if (std::isfinite(grown)) new_scale = grown;
  } else {
    new_tracker = tracker + 1;
  }
  scale_.fill_(static_cast<double>(new_scale));
  growth_tracker_.fill_(new_tracker);
}

double GradScaler::current_scale() const {
  return enabled() ? static_cast<double>(scale_.item<float>()) : 1.0;
}

std::int64_t GradScaler::growth_tracker() const {
  return enabled() ? static_cast<std::int64_t>(growth_tracker_.item<std::int32_t>()) : 0;
}

model::ScalerState GradScaler::state() const {
  model::ScalerState s;
  s.enabled = enabled();
  if (!s.enabled) return s;
  s.scale = current_scale();
  s.growth_tracker = growth_tracker();
  s.growth_factor = options_.growth_factor;
  s.backoff_factor = options_.backoff_factor;
  s.growth_interval = options_.growth_interval;
  return s;
}

void GradScaler::load(const model::ScalerState& state) {
  if (!enabled()) return;
  if (!state.enabled) {
    throw std::invalid_argument(
        "the loss scaler state is empty, saved by a run without loss scaling (fp32 or bf16)");
  }
  options_.growth_factor = state.growth_factor;
  options_.backoff_factor = state.backoff_factor;
  options_.growth_interval = state.growth_interval;
  scale_.fill_(state.scale);
  growth_tracker_.fill_(state.growth_tracker);
  stage_ = Stage::kReady;
}

}  // namespace dl::train
