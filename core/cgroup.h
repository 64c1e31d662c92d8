// Control-group limits of the calling process, cgroup v1 and v2: the CPU quota and the memory
// limit a container runtime imposes, which /proc/cpuinfo and /proc/meminfo do not show.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/host.h"

namespace dl {

struct CgroupLimits {
  int version = 0;                  // 1 or 2 when a hierarchy was found, else 0
  std::optional<double> cpu_quota;  // CPUs' worth of time (quota / period), none = unlimited
  std::string cpu_source;           // the file the binding quota came from
  std::optional<std::uint64_t> memory_limit;  // bytes, none = unlimited
  std::string memory_source;
  std::optional<std::uint64_t> memory_used;  // bytes in use minus reclaimable page cache
};

// Reads /proc/self/mountinfo and /proc/self/cgroup to find this process's cgroup directories, then
// takes the tightest limit on the path from the process's cgroup up to the hierarchy's root
// (limits nest: a parent's quota binds its children).
CgroupLimits read_cgroup_limits(const Host& host);

// Exposed for tests.
struct CgroupMount {
  std::string root;                      // the part of the hierarchy mounted
  std::string mount_point;               // where it is mounted
  std::string fs_type;                   // "cgroup" or "cgroup2"
  std::vector<std::string> controllers;  // v1 only, from the super options
};
std::vector<CgroupMount> parse_cgroup_mounts(const std::string& mountinfo);

}  // namespace dl
