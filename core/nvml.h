// NVML, the driver's management library, loaded at run time with dlopen: no link-time CUDA
// dependency, and a machine without the driver is an ordinary CPU machine.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "core/host.h"

namespace dl {

struct GpuUtilization {
  unsigned gpu_percent = 0;
  unsigned memory_percent = 0;
  unsigned temperature_c = 0;
  unsigned long long used_bytes = 0;
  unsigned long long total_bytes = 0;
};

// An initialised NVML session; nvmlShutdown and dlclose on destruction.
class Nvml {
 public:
  // Loads `library` (empty: libnvidia-ml.so.1) and initialises it. On failure returns nullptr and
  // puts the reason in `why`.
  static std::unique_ptr<Nvml> open(const std::string& library, std::string* why);
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  std::string driver_version() const;
  // The newest CUDA the driver supports (11040 for 11.4), 0 when NVML cannot say.
  int cuda_driver_version() const;
  int device_count() const;
  std::optional<GpuInfo> device(int index) const;
  std::optional<GpuUtilization> utilization(int index) const;

 private:
  struct Api;
  explicit Nvml(std::unique_ptr<Api> api);
  std::unique_ptr<Api> api_;
};

// Count, names, memory, compute capability and driver version of every GPU; never throws.
GpuReport query_nvml(const std::string& library);

}  // namespace dl
