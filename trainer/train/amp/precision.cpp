// Precision resolution.
#include "train/amp/precision.h"

#include "core/errors.h"
#include "train/amp/cuda_support.h"

namespace dl::train {

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::kFp16:
      return "fp16";
    case Precision::kBf16:
      return "bf16";
    case Precision::kFp32:
      break;
  }
  return "fp32";
}

bool uses_autocast(Precision p) {
  return p != Precision::kFp32;
}

bool uses_scaler(Precision p) {
  return p == Precision::kFp16;
}

c10::ScalarType autocast_dtype(Precision p) {
  switch (p) {
    case Precision::kFp16:
      return c10::ScalarType::Half;
    case Precision::kBf16:
      return c10::ScalarType::BFloat16;
    case Precision::kFp32:
      break;
  }
  return c10::ScalarType::Float;
}

PrecisionChoice resolve_precision(const std::string& asked, const std::string& source,
                                  c10::Device device) {
  PrecisionChoice c;
  const int major = device.is_cuda() ? cuda::major_capability(device.index()) : -1;
  const std::string capability =
      major >= 0 ? "compute capability " + std::to_string(major) + ".x" : "unknown capability";
  if (asked == "auto") {
    if (!device.is_cuda()) {
      // CPU autocast is bf16, which only pays off on CPUs with bf16 instructions: fp32 is the
      // safe default and bf16 stays one setting away.
      c.precision = Precision::kFp32;
      c.reason = "auto on the CPU";
    } else if (major >= 8) {
      c.precision = Precision::kBf16;
      c.reason = "auto: " + capability + " has bf16";
    } else {
      // fp16 with loss scaling works on every GPU; unknown capability lands here too.
      c.precision = Precision::kFp16;
      c.reason = "auto: " + capability + (major >= 0 ? " has no fast bf16" : "");
    }
    return c;
  }
  c.reason = "from " + source;
  if (asked == "fp16") {
    if (!device.is_cuda()) {
      throw UserError(exit_code::kUsage,
                      source +
                          ": fp16 needs a CUDA device (CPU autocast supports bf16 only); "
                          "use bf16 or fp32 on the CPU");
    }
    c.precision = Precision::kFp16;
  } else if (asked == "bf16") {
    c.precision = Precision::kBf16;
    if (device.is_cuda() && major >= 0 && major < 8) {
      c.warning = "bf16 on " + capability +
                  " has no tensor-core support and may be slow; fp16 is the usual choice there";
    }
  } else {
    c.precision = Precision::kFp32;
  }
  return c;
}

}  // namespace dl::train
