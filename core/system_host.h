// The real host: Linux system calls, files and NVML loaded at run time.
#pragma once

#include <string>

#include "core/host.h"

namespace dl {

class SystemHost : public Host {
 public:
  // `nvml_library` is the name or path handed to dlopen; empty means the driver's
  // libnvidia-ml.so.1.
  explicit SystemHost(std::string nvml_library = {});

  std::optional<std::string> read_file(const std::string& path) const override;
  std::optional<int> affinity_cpus() const override;
  int online_cpus() const override;
  std::optional<FsSpace> fs_space(const std::string& path) const override;
  GpuReport gpus() const override;

 private:
  std::string nvml_library_;
};

}  // namespace dl
