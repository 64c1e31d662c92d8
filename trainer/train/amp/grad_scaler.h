// Loss scaling for fp16 training, with the semantics of PyTorch's torch.cuda.amp.GradScaler
// (torch/cuda/amp/grad_scaler.py), which LibTorch does not have in C++:
//
//   scaler.scale(loss).backward();      // loss * scale, so small fp16 gradients do not flush to 0
//   scaler.unscale(opt);                // grads *= 1/scale; found_inf = any grad inf/NaN
//   clip_grad_norm_(params, max_norm);  // on the true gradients
//   bool stepped = scaler.step(opt);    // opt.step() unless found_inf
//   scaler.update();                    // found_inf: scale *= backoff, tracker = 0; else
//                                       // ++tracker == interval: scale *= growth, tracker = 0
//
// scale and found_inf are float32 tensors of shape [1] and the growth tracker an int32 tensor, on
// the training device, as in Python. On CUDA unscale and update are the fused ATen ops Python
// uses (_amp_foreach_non_finite_check_and_unscale_, _amp_update_scale_); LibTorch 1.13 has no
// CPU kernels for them, so elsewhere a plain implementation of the same algorithm runs. A
// disabled scaler (fp32, bf16) passes everything through.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <vector>

#include "model/checkpoint.h"

namespace torch::optim {
class Optimizer;
}

namespace dl::train {

struct ScalerOptions {
  bool enabled = false;
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  std::int64_t growth_interval = 2000;
};

// Which implementation of unscale/update runs. kFused on a device without kernels for the fused
// ops (the CPU in LibTorch 1.13) fails when called.
enum class ScalerKernels { kAuto, kFused, kPlain };

class GradScaler {
 public:
  GradScaler(const ScalerOptions& options, c10::Device device,
             ScalerKernels kernels = ScalerKernels::kAuto);

  bool enabled() const { return options_.enabled; }
  bool fused() const { return fused_; }

  // loss * scale; `loss` unchanged when disabled.
  at::Tensor scale(const at::Tensor& loss) const;

  // Multiplies every gradient of the optimizer's parameters by 1/scale and records whether any
  // of them holds an inf or NaN. At most once per step, after all gradients are accumulated.
  // Throws std::logic_error when called twice or after step().
  void unscale(torch::optim::Optimizer& optimizer);

  // Unscales (if not done yet), then runs optimizer.step() unless a gradient was inf/NaN.
  // Returns whether the step was taken. Reads found_inf on the host (one sync, as Python does).
  bool step(torch::optim::Optimizer& optimizer);

  // Adjusts the scale after step(). Throws std::logic_error when no step preceded it.
  void update();

  // The current scale (1.0 when disabled) and growth tracker; each reads the device.
  double current_scale() const;
  std::int64_t growth_tracker() const;

  // The state for a checkpoint, with Python's fields; enabled=false when disabled.
  model::ScalerState state() const;
  // Restores scale, tracker and factors (as Python's load_state_dict, the checkpoint's factors
  // win over the options). Nothing when disabled. Throws std::invalid_argument for the state of a
  // disabled scaler, as Python does.
  void load(const model::ScalerState& state);

 private:
  enum class Stage { kReady, kUnscaled, kStepped };
  void unscale_plain(const std::vector<at::Tensor>& grads, const at::Tensor& inv_scale);
  void update_plain();

  ScalerOptions options_;
  bool fused_ = false;
  at::Tensor scale_;           // float32 [1]
  at::Tensor growth_tracker_;  // int32 [1]
  at::Tensor found_inf_;       // float32 [1], valid from unscale to update
  Stage stage_ = Stage::kReady;
};

}  // namespace dl::train
