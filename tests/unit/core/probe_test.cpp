// The probe's derived figures: usable cores from affinity and quota, usable memory from
// MemAvailable and the cgroup, /dev/shm, GPUs passed through.
#include "core/probe.h"

#include <gtest/gtest.h>

#include <sched.h>

#include "core/system_host.h"
#include "support/fake_host.h"

namespace dl::test {
namespace {

constexpr const char* kMeminfo =
    "MemTotal:       16318668 kB\n"
    "MemFree:         1000000 kB\n"
    "MemAvailable:   12000000 kB\n";

TEST(ProbeCpu, AffinityMaskBeatsTheOnlineCount) {
  FakeHost host;
  host.online = 16;
  host.affinity = 1;  // taskset -c 0
  const Facts f = probe(host);
  EXPECT_EQ(f.cpu.usable, 1);
  EXPECT_NE(f.cpu.usable_reason.find("1 in the affinity mask of 16 online"), std::string::npos)
      << f.cpu.usable_reason;
}

TEST(ProbeCpu, QuotaBindsAndRoundsUp) {
  FakeHost host;
  host.online = 16;
  host.affinity = 16;
  host.make_v2_container();
  host.files["/sys/fs/cgroup/cpu.max"] = "150000 100000\n";  // docker run --cpus 1.5
  const Facts f = probe(host);
  EXPECT_EQ(f.cpu.usable, 2);
  EXPECT_NE(f.cpu.usable_reason.find("cgroup quota 1.50 CPUs"), std::string::npos);
}

TEST(ProbeCpu, OneCpuQuotaIsOneCore) {
  FakeHost host;
  host.online = 2;
  host.affinity = 2;
  host.make_v1_host();
  host.files["/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us"] = "100000\n";
  host.files["/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us"] = "100000\n";
  EXPECT_EQ(probe(host).cpu.usable, 1);
}

TEST(ProbeCpu, QuotaAboveTheMaskDoesNotBind) {
  FakeHost host;
  host.online = 8;
  host.affinity = 2;
  host.make_v2_container();
  host.files["/sys/fs/cgroup/cpu.max"] = "400000 100000\n";
  const Facts f = probe(host);
  EXPECT_EQ(f.cpu.usable, 2);
  EXPECT_NE(f.cpu.usable_reason.find("does not bind"), std::string::npos);
}

TEST(ProbeCpu, TinyQuotaStillLeavesOneCore) {
  FakeHost host;
  host.make_v2_container();
  host.files["/sys/fs/cgroup/cpu.max"] = "10000 100000\n";  // 0.1 CPU
  EXPECT_EQ(probe(host).cpu.usable, 1);
}

TEST(ProbeCpu, UnknownAffinityFallsBackToOnline) {
  FakeHost host;
  host.affinity.reset();
  host.online = 6;
  EXPECT_EQ(probe(host).cpu.usable, 6);
}

TEST(ProbeMemory, MemAvailableWithoutCgroup) {
  FakeHost host;
  host.files["/proc/meminfo"] = kMeminfo;
  const Facts f = probe(host);
  EXPECT_EQ(f.memory.total, 16318668ull * 1024);
  EXPECT_EQ(f.memory.available, 12000000ull * 1024);
  EXPECT_EQ(f.memory.usable, 12000000ull * 1024);
  EXPECT_FALSE(f.memory.cgroup_limit);
}

TEST(ProbeMemory, CgroupLimitMinusUsageBinds) {
  FakeHost host;
  host.files["/proc/meminfo"] = kMeminfo;
  host.make_v2_container();
  host.files["/sys/fs/cgroup/memory.max"] = "2147483648\n";
  host.files["/sys/fs/cgroup/memory.current"] = "536870912\n";
  const Facts f = probe(host);
  EXPECT_EQ(f.memory.usable, 2147483648ull - 536870912ull);
  EXPECT_NE(f.memory.usable_reason.find("cgroup limit 2.0 GiB"), std::string::npos);
}

TEST(ProbeMemory, CgroupLimitAboveAvailableDoesNotBind) {
  FakeHost host;
  host.files["/proc/meminfo"] = kMeminfo;
  host.make_v2_container();
  host.files["/sys/fs/cgroup/memory.max"] = "107374182400\n";  // 100 GiB
  EXPECT_EQ(probe(host).memory.usable, 12000000ull * 1024);
}

TEST(ProbeShm, SizeAndFreeSpace) {
  FakeHost host;
  host.spaces["/dev/shm"] = {64ull << 20, 60ull << 20};
  const Facts f = probe(host);
  EXPECT_TRUE(f.shm.present);
  EXPECT_EQ(f.shm.total, 64ull << 20);
  EXPECT_EQ(f.shm.free, 60ull << 20);
}

TEST(ProbeShm, Missing) {
  FakeHost host;
  EXPECT_FALSE(probe(host).shm.present);
}

TEST(ProbeGpu, ReportPassesThrough) {
  FakeHost host;
  host.gpu_report.available = true;
  host.gpu_report.gpus.push_back({0, "NVIDIA H100", 80ull << 30, 79ull << 30, 9, 0});
  const Facts f = probe(host);
  ASSERT_EQ(f.gpu.gpus.size(), 1u);
  EXPECT_EQ(f.gpu.gpus[0].cc_major, 9);
}

TEST(Meminfo, ParsesKilobytesAndRejectsGarbage) {
  EXPECT_EQ(meminfo_bytes(kMeminfo, "MemFree").value_or(0), 1000000ull * 1024);
  EXPECT_FALSE(meminfo_bytes(kMeminfo, "SwapTotal"));
  EXPECT_FALSE(meminfo_bytes("MemTotal: lots kB\n", "MemTotal"));
  EXPECT_FALSE(meminfo_bytes(kMeminfo, "Mem"));  // a prefix is not the key
}

TEST(ProbeSystem, RealMachineAgreesWithTheKernel) {
  // The real host: the affinity count must match what the kernel says for this process, and
  // /proc/meminfo must parse.
  const SystemHost host;
  const Facts f = probe(host);
  EXPECT_GE(f.cpu.usable, 1);
  EXPECT_LE(f.cpu.usable, f.cpu.online);
  EXPECT_GT(f.memory.total, 0u);
  EXPECT_LE(f.memory.usable, f.memory.total);
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  EXPECT_EQ(f.cpu.affinity.value_or(-1), CPU_COUNT(&set));
}

}  // namespace
}  // namespace dl::test
