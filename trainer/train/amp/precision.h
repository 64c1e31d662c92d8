// The training precision: fp32; fp16 (autocast to half + GradScaler, for GPUs below compute
// capability 8.0); bf16 (autocast to bfloat16, no scaler: its exponent range is fp32's). Chosen by
// the user or by dl-launch's plan (DL_PRECISION), or resolved here from "auto" and the device.
#pragma once

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <string>

namespace dl::train {

enum class Precision { kFp32, kFp16, kBf16 };

struct PrecisionChoice {
  Precision precision = Precision::kFp32;
  std::string reason;   // for the log: why this precision
  std::string warning;  // non-empty when the choice works but is a poor fit for the device
};

// `asked`: auto, fp32, fp16 or bf16; `source` names where it came from ("--precision",
// "DL_PRECISION", ...). auto: CUDA -> bf16 from compute capability 8.0 on, else fp16; CPU -> fp32.
// Throws UserError (64) for fp16 on the CPU, whose autocast supports bf16 only.
PrecisionChoice resolve_precision(const std::string& asked, const std::string& source,
                                  c10::Device device);

const char* precision_name(Precision p);
bool uses_autocast(Precision p);  // fp16 and bf16
bool uses_scaler(Precision p);    // fp16: its 5-bit exponent underflows small gradients
// The dtype autocast casts to: Half, BFloat16 (Float for fp32, which does not autocast).
c10::ScalarType autocast_dtype(Precision p);

}  // namespace dl::train
