// Fuzzes the zip walk that guards LibTorch's zip reader (scan_zip_records: the central directory
// of a checkpoint, a weights file or a TorchScript model, read before LibTorch reads any record).
// It has no refusal by exception: every input gets a verdict, with one line of reason exactly when
// the verdict is not "safe". Anything escaping, a crash, a leak or a sanitizer report is a
// finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "model/zip_scan.h"

namespace {
volatile std::size_t sink = 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const dl::model::ZipScan z = dl::model::scan_zip_records(data, size);
  const bool safe = z.verdict == dl::model::ZipScan::Verdict::kSafe;
  if (safe != z.why.empty()) __builtin_trap();
  if (z.why.find('\n') != std::string::npos) __builtin_trap();
  sink = sink + z.why.size();
  return 0;
}
