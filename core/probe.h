// Facts about the machine as this process may really use it: CPU cores after affinity and cgroup
// quota, RAM after the cgroup limit, /dev/shm, GPUs. Gathered once, through the Host interface.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/host.h"

namespace dl {

struct CpuFacts {
  int online = 1;               // cores on the machine
  std::optional<int> affinity;  // cores in the affinity mask
  std::optional<double> quota;  // cgroup CPU quota in cores
  std::string quota_source;     // file that set it
  int usable = 1;               // min(affinity, ceil(quota)), at least 1
  std::string usable_reason;
};

struct MemoryFacts {
  std::uint64_t total = 0;      // MemTotal
  std::uint64_t available = 0;  // MemAvailable
  std::optional<std::uint64_t> cgroup_limit;
  std::string cgroup_source;
  std::optional<std::uint64_t> cgroup_used;
  std::uint64_t usable = 0;  // what a new process may still take
  std::string usable_reason;
};

struct ShmFacts {
  bool present = false;
  std::uint64_t total = 0;
  std::uint64_t free = 0;
};

struct Facts {
  CpuFacts cpu;
  MemoryFacts memory;
  ShmFacts shm;
  int cgroup_version = 0;
  GpuReport gpu;
};

Facts probe(const Host& host);

// Exposed for tests: "MemTotal:  16318668 kB" style lookups in /proc/meminfo, in bytes.
std::optional<std::uint64_t> meminfo_bytes(const std::string& meminfo, const std::string& key);

}  // namespace dl
