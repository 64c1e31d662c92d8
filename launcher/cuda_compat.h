// Whether the NVIDIA driver can run the CUDA the image was built for. CUDA fails late and deep
// (a "CUDA driver version is insufficient" from the first kernel in the trainer); this check
// turns that into one line from dl-launch, before anything starts.
//
// The rule (NVIDIA's compatibility documentation):
//   * the driver's CUDA (what NVML reports, e.g. 11.4 for driver 470) is at least the required
//     one: fine;
//   * the same major release with a lower minor (11.4 driver, 11.6 runtime): CUDA 11 and later
//     run through minor-version compatibility when the driver is at least the major's minimum
//     (450.80.02 for 11.x, 525.60.13 for 12.x), so this is a warning, naming the driver that
//     supports the required minor (PTX JIT and the newest APIs need it);
//   * a lower major (a CUDA 10.2 driver, an 11.6 runtime), or below the major's minimum: an
//     error (exit 69) that names the driver version to install.
#pragma once

#include <optional>
#include <string>

#include "core/host.h"

namespace dl {

struct CudaVersion {
  int major = 0;
  int minor = 0;
};

// "11.6.2", "11.6" or "11" -> {11, 6}; nullopt for anything else.
std::optional<CudaVersion> parse_cuda_version(const std::string& text);

// NVML's integer form: 11040 -> {11, 4}.
CudaVersion cuda_from_nvml(int version);

// "11.4"
std::string to_string(const CudaVersion& v);

// The oldest Linux driver that supports `v` in full ("510.39.01" for 11.6), "" when not known.
std::string min_driver_for(const CudaVersion& v);

// Compares driver version strings numerically, part by part: -1, 0 or 1.
int compare_driver_versions(const std::string& a, const std::string& b);

struct DriverVerdict {
  bool ok = true;
  std::string message;  // the error when !ok; a warning when ok and not empty
};

// `required` is the CUDA version the program needs ("11.6.2") and `source` where that came from
// ("CUDA_VERSION"). A driver that does not report its CUDA version passes.
DriverVerdict check_cuda_driver(const GpuReport& gpu, const std::string& required,
                                const std::string& source);

}  // namespace dl
