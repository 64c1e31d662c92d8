// The machine probe: turns host reads into Facts, each derived figure with the reason behind it.
#include "core/probe.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/cgroup.h"
#include "core/text.h"

namespace dl {
namespace {

CpuFacts probe_cpu(const Host& host, const CgroupLimits& cg) {
  CpuFacts cpu;
  cpu.online = host.online_cpus();
  cpu.affinity = host.affinity_cpus();
  cpu.quota = cg.cpu_quota;
  cpu.quota_source = cg.cpu_source;

  const int from_mask = cpu.affinity.value_or(cpu.online);
  int usable = from_mask;
  std::string reason = cpu.affinity ? std::to_string(from_mask) + " in the affinity mask"
                                    : std::to_string(from_mask) + " online";
  if (cpu.affinity && *cpu.affinity != cpu.online) {
    reason += " of " + std::to_string(cpu.online) + " online";
  }
  if (cpu.quota) {
    // A quota of 1.5 CPUs can keep two threads busy part of the time: round up, as the issue and
    // the JVM/.NET container support do.
    const int from_quota = std::max(1, static_cast<int>(std::ceil(*cpu.quota - 1e-9)));
    char q[32];
    std::snprintf(q, sizeof q, "%.2f", *cpu.quota);
    if (from_quota < usable) {
      usable = from_quota;
      reason = "cgroup quota " + std::string(q) + " CPUs (" + cpu.quota_source + "); " + reason;
    } else {
      reason += "; cgroup quota " + std::string(q) + " CPUs does not bind";
    }
  }
  cpu.usable = std::max(1, usable);
  cpu.usable_reason = reason;
  return cpu;
}

MemoryFacts probe_memory(const Host& host, const CgroupLimits& cg) {
  MemoryFacts mem;
  const std::string meminfo = host.read_file("/proc/meminfo").value_or("");
  mem.total = meminfo_bytes(meminfo, "MemTotal").value_or(0);
  mem.available = meminfo_bytes(meminfo, "MemAvailable").value_or(mem.total);
  mem.cgroup_limit = cg.memory_limit;
  mem.cgroup_source = cg.memory_source;
  mem.cgroup_used = cg.memory_used;
  mem.usable = mem.available;
  mem.usable_reason = "MemAvailable";
  if (mem.cgroup_limit) {
    const std::uint64_t used = mem.cgroup_used.value_or(0);
    const std::uint64_t room = *mem.cgroup_limit > used ? *mem.cgroup_limit - used : 0;
    if (room < mem.usable) {
      mem.usable = room;
      mem.usable_reason = "cgroup limit " + format_bytes(*mem.cgroup_limit) + " minus " +
                          format_bytes(used) + " in use";
    }
  }
  return mem;
}

}  // namespace

std::optional<std::uint64_t> meminfo_bytes(const std::string& meminfo, const std::string& key) {
  for (const auto& line : split(meminfo, '\n')) {
    const auto colon = line.find(':');
    if (colon == std::string::npos || line.compare(0, colon, key) != 0) continue;
    const auto fields = split(trim(line.substr(colon + 1)), ' ');
    if (fields.empty()) return std::nullopt;
    const auto value = parse_u64(fields[0]);
    if (!value) return std::nullopt;
    const bool kib = fields.size() > 1 && fields.back() == "kB";
    return kib ? *value * 1024 : *value;
  }
  return std::nullopt;
}

Facts probe(const Host& host) {
  Facts facts;
  const CgroupLimits cg = read_cgroup_limits(host);
  facts.cgroup_version = cg.version;
  facts.cpu = probe_cpu(host, cg);
  facts.memory = probe_memory(host, cg);
  if (const auto shm = host.fs_space("/dev/shm")) {
    facts.shm.present = true;
    facts.shm.total = shm->total_bytes;
    facts.shm.free = shm->free_bytes;
  }
  facts.gpu = host.gpus();
  return facts;
}

}  // namespace dl
