// An in-memory host for tests (after ninja's VirtualFileSystem): files, CPU counts, file-system
// space and GPUs are whatever the test puts in.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "core/host.h"

namespace dl::test {

class FakeHost : public Host {
 public:
  std::map<std::string, std::string> files;
  std::optional<int> affinity = 4;
  int online = 4;
  std::map<std::string, FsSpace> spaces;
  GpuReport gpu_report{false, "NVML not found (fake): no NVIDIA driver", "", 0, {}};

  std::optional<std::string> read_file(const std::string& path) const override {
    const auto it = files.find(path);
    if (it == files.end()) return std::nullopt;
    return it->second;
  }
  std::optional<int> affinity_cpus() const override { return affinity; }
  int online_cpus() const override { return online; }
  std::optional<FsSpace> fs_space(const std::string& path) const override {
    const auto it = spaces.find(path);
    if (it == spaces.end()) return std::nullopt;
    return it->second;
  }
  GpuReport gpus() const override { return gpu_report; }

  // A cgroup v2 container with its own cgroup namespace (Docker's default on current hosts).
  void make_v2_container() {
    files["/proc/self/mountinfo"] =
        "22 1 0:21 / /proc rw,nosuid - proc proc rw\n"
        "30 22 0:26 / /sys/fs/cgroup ro,nosuid,nodev,noexec,relatime - cgroup2 cgroup rw\n";
    files["/proc/self/cgroup"] = "0::/\n";
    files["/sys/fs/cgroup/cgroup.controllers"] = "cpuset cpu io memory hugetlb pids rdma misc\n";
  }

  // A cgroup v1 host (no cgroup namespace): the process sits in /docker/abc of each hierarchy.
  void make_v1_host(const std::string& path = "/docker/abc") {
    files["/proc/self/mountinfo"] =
        "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
        "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid - cgroup cgroup rw,cpu,cpuacct\n"
        "35 31 0:32 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory\n"
        "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
    files["/proc/self/cgroup"] = "12:memory:" + path + "\n4:cpu,cpuacct:" + path + "\n0::/\n";
    files["/sys/fs/cgroup/unified/cgroup.controllers"] = "hugetlb\n";
  }
};

}  // namespace dl::test
