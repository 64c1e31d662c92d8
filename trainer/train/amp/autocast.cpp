// The autocast compatibility layer: one branch per C++ API generation.
#include "train/amp/autocast.h"

#include <ATen/autocast_mode.h>
#include <torch/version.h>

#include <stdexcept>
#include <string>

// PyTorch 2.4 (pytorch/pytorch#124359) added the device-generic functions and deprecated the
// per-device ones; 1.13 to 2.3 have only the per-device ones. Selecting by the major version
// alone would send 2.0-2.3 to functions they do not have.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define DL_AUTOCAST_DEVICE_GENERIC 1
#else
#define DL_AUTOCAST_DEVICE_GENERIC 0
#endif

namespace dl::train {
namespace {

void check_supported(c10::DeviceType device) {
  if (device != c10::DeviceType::CPU && device != c10::DeviceType::CUDA) {
    throw std::invalid_argument("autocast: device type " + c10::DeviceTypeName(device) +
                                " is not supported (expected cpu or cuda)");
  }
}

}  // namespace

#if DL_AUTOCAST_DEVICE_GENERIC

AutocastState autocast_state(c10::DeviceType device) {
  check_supported(device);
  return {at::autocast::is_autocast_enabled(device), at::autocast::get_autocast_dtype(device)};
}

void set_autocast_state(c10::DeviceType device, const AutocastState& state) {
  check_supported(device);
  at::autocast::set_autocast_dtype(device, state.dtype);
  at::autocast::set_autocast_enabled(device, state.enabled);
}

#else  // LibTorch 1.13 to 2.3

AutocastState autocast_state(c10::DeviceType device) {
  check_supported(device);
  if (device == c10::DeviceType::CUDA) {
    return {at::autocast::is_enabled(), at::autocast::get_autocast_gpu_dtype()};
  }
  return {at::autocast::is_cpu_enabled(), at::autocast::get_autocast_cpu_dtype()};
}

void set_autocast_state(c10::DeviceType device, const AutocastState& state) {
  check_supported(device);
  if (device == c10::DeviceType::CUDA) {
    at::autocast::set_autocast_gpu_dtype(state.dtype);
    at::autocast::set_enabled(state.enabled);
  } else {
    at::autocast::set_autocast_cpu_dtype(state.dtype);
    at::autocast::set_cpu_enabled(state.enabled);
  }
}

#endif

AutocastGuard::AutocastGuard(c10::DeviceType device, c10::ScalarType dtype)
    : device_(device), previous_(autocast_state(device)) {
  set_autocast_state(device, {true, dtype});
  at::autocast::increment_nesting();
}

AutocastGuard::~AutocastGuard() {
  // As torch.autocast.__exit__: the cache lives as long as the outermost region.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  set_autocast_state(device_, previous_);
}

}  // namespace dl::train
