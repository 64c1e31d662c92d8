// Linux implementation of the host interface.
#include "core/system_host.h"

#include <sched.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <utility>

#include "core/nvml.h"

namespace dl {

SystemHost::SystemHost(std::string nvml_library) : nvml_library_(std::move(nvml_library)) {}

std::optional<std::string> SystemHost::read_file(const std::string& path) const {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream out;
  out << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return out.str();
}

std::optional<int> SystemHost::affinity_cpus() const {
  // A fixed cpu_set_t holds 1024 CPUs; machines with more need the dynamically sized set.
  for (int ncpus = 1024; ncpus <= (1 << 16); ncpus *= 4) {
    cpu_set_t* set = CPU_ALLOC(ncpus);
    if (set == nullptr) return std::nullopt;
    const size_t size = CPU_ALLOC_SIZE(ncpus);
    CPU_ZERO_S(size, set);
    if (sched_getaffinity(0, size, set) == 0) {
      const int count = CPU_COUNT_S(size, set);
      CPU_FREE(set);
      return count;
    }
    CPU_FREE(set);
    if (errno != EINVAL) return std::nullopt;
  }
  return std::nullopt;
}

int SystemHost::online_cpus() const {
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

std::optional<FsSpace> SystemHost::fs_space(const std::string& path) const {
  struct statvfs st {};
  if (statvfs(path.c_str(), &st) != 0) return std::nullopt;
  FsSpace space;
  space.total_bytes = static_cast<std::uint64_t>(st.f_blocks) * st.f_frsize;
  space.free_bytes = static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize;
  return space;
}

GpuReport SystemHost::gpus() const {
  return query_nvml(nvml_library_);
}

}  // namespace dl
