// Device choice.
#include "train/run/device.h"

#include <torch/cuda.h>

#include "core/errors.h"

namespace dl::train {

c10::Device choose_device(const std::string& asked, int default_index) {
  if (asked == "cpu") return c10::kCPU;
  const bool cuda = torch::cuda::is_available();
  if (asked == "auto" && !cuda) return c10::kCPU;
  if (!cuda) {
    throw UserError(exit_code::kUnavailable,
                    "device " + asked + ": this LibTorch sees no CUDA device; use --device cpu");
  }
  const int index = asked.rfind("cuda:", 0) == 0 ? std::stoi(asked.substr(5)) : default_index;
  if (index >= static_cast<int>(torch::cuda::device_count())) {
    throw UserError(exit_code::kUnavailable, "device " + asked + ": only " +
                                                 std::to_string(torch::cuda::device_count()) +
                                                 " CUDA device(s)");
  }
  return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index));
}

}  // namespace dl::train
