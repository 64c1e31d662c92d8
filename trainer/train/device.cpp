// Device choice.
#include "train/device.h"

#include <torch/cuda.h>

#include "core/errors.h"

namespace dl::train {

c10::Device choose_device(const std::string& asked) {
  if (asked == "cpu") return c10::kCPU;
  const bool cuda = torch::cuda::is_available();
  if (asked == "auto") return cuda ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU);
  if (!cuda) {
    throw UserError(exit_code::kUnavailable,
                    "device " + asked + ": this LibTorch sees no CUDA device; use --device cpu");
  }
  const int index = asked == "cuda" ? 0 : std::stoi(asked.substr(5));
  if (index >= static_cast<int>(torch::cuda::device_count())) {
    throw UserError(exit_code::kUnavailable, "device " + asked + ": only " +
                                                 std::to_string(torch::cuda::device_count()) +
                                                 " CUDA device(s)");
  }
  return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index));
}

}  // namespace dl::train
