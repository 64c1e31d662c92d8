// The host interface: every read dl-launch makes of the machine (files under /proc and
// /sys/fs/cgroup, the CPU affinity mask, file-system space, NVML) goes through it, so that the
// probe can be tested against fake cgroup trees and fake GPUs (after ninja's DiskInterface).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dl {

struct FsSpace {
  std::uint64_t total_bytes = 0;
  std::uint64_t free_bytes = 0;  // available to an unprivileged writer
};

struct GpuInfo {
  int index = 0;
  std::string name;
  std::uint64_t total_bytes = 0;
  std::uint64_t free_bytes = 0;
  int cc_major = 0;  // compute capability
  int cc_minor = 0;
  // What NVML says of its clocks and its PCIe link (0: NVML cannot say). An idle GPU runs both
  // slower than its maximum to save power: the current figures are a moment's.
  unsigned sm_clock_mhz = 0, max_sm_clock_mhz = 0;
  unsigned memory_clock_mhz = 0, max_memory_clock_mhz = 0;
  unsigned pcie_gen = 0, max_pcie_gen = 0;
  unsigned pcie_width = 0, max_pcie_width = 0;
};

// What NVML said. No NVML (no driver) or no GPU is an ordinary CPU machine: `available` is false
// and `note` says why, for the report.
struct GpuReport {
  bool available = false;
  std::string note;
  std::string driver_version;
  // The newest CUDA the driver supports, as NVML encodes it (11040 for 11.4); 0 when unknown.
  int cuda_driver_version = 0;
  std::vector<GpuInfo> gpus;
};

class Host {
 public:
  virtual ~Host() = default;
  // The whole file, or nullopt when it does not exist or cannot be read.
  virtual std::optional<std::string> read_file(const std::string& path) const = 0;
  // CPUs in this process's affinity mask (sched_getaffinity), or nullopt when unknown.
  virtual std::optional<int> affinity_cpus() const = 0;
  // CPUs online on the machine (sysconf).
  virtual int online_cpus() const = 0;
  virtual std::optional<FsSpace> fs_space(const std::string& path) const = 0;
  virtual GpuReport gpus() const = 0;
};

}  // namespace dl
