// Autocast (automatic mixed precision) for one device type, the same code against LibTorch 1.13
// and 2.x. The C++ autocast API changed in 2.4: 1.13 to 2.3 have one function per device
// (`set_enabled` for CUDA, `set_cpu_enabled`, `set_autocast_gpu_dtype`, ...); 2.4 made them
// device-generic (`set_autocast_enabled(device_type, on)`, `set_autocast_dtype(device_type,
// dtype)`) and deprecated the old ones. autocast.cpp picks by <torch/version.h>; this header
// needs no LibTorch beyond c10's small types.
#pragma once

#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>

namespace dl::train {

// Autocast's thread-local state for one device type.
struct AutocastState {
  bool enabled = false;
  c10::ScalarType dtype = c10::ScalarType::Float;  // the lower precision ops are cast to
};

// Only CPU and CUDA are supported; other device types throw std::invalid_argument.
AutocastState autocast_state(c10::DeviceType device);
void set_autocast_state(c10::DeviceType device, const AutocastState& state);

// Autocast on `device` with `dtype` for the guard's lifetime, as Python's
// `with torch.autocast(device, dtype):` does: on exit the previous state comes back, and when
// the outermost autocast region ends the cache of casted weights is cleared (it holds low-
// precision copies of the parameters that would otherwise outlive the step and go stale after
// the optimizer updates the weights).
class AutocastGuard {
 public:
  AutocastGuard(c10::DeviceType device, c10::ScalarType dtype);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  c10::DeviceType device_;
  AutocastState previous_;
};

}  // namespace dl::train
