// cgroup v1 and v2 discovery against fake trees: where the process's cgroup is, nested limits,
// containers with and without a cgroup namespace, and hosts with no cgroup at all.
#include "core/cgroup.h"

#include <gtest/gtest.h>

#include "support/fake_host.h"

namespace dl::test {
namespace {

TEST(CgroupV2, QuotaAndMemoryLimitOfTheContainer) {
  FakeHost host;
  host.make_v2_container();
  host.files["/sys/fs/cgroup/cpu.max"] = "150000 100000\n";
  host.files["/sys/fs/cgroup/memory.max"] = "4294967296\n";
  host.files["/sys/fs/cgroup/memory.current"] = "1073741824\n";
  host.files["/sys/fs/cgroup/memory.stat"] = "anon 100\nfile 500\ninactive_file 268435456\n";
  const CgroupLimits l = read_cgroup_limits(host);
  EXPECT_EQ(l.version, 2);
  ASSERT_TRUE(l.cpu_quota);
  EXPECT_DOUBLE_EQ(*l.cpu_quota, 1.5);
  EXPECT_EQ(l.cpu_source, "/sys/fs/cgroup/cpu.max");
  ASSERT_TRUE(l.memory_limit);
  EXPECT_EQ(*l.memory_limit, 4294967296u);
  ASSERT_TRUE(l.memory_used);
  EXPECT_EQ(*l.memory_used, 1073741824u - 268435456u);  // reclaimable page cache not counted
}

TEST(CgroupV2, MaxMeansNoLimit) {
  FakeHost host;
  host.make_v2_container();
  host.files["/sys/fs/cgroup/cpu.max"] = "max 100000\n";
  host.files["/sys/fs/cgroup/memory.max"] = "max\n";
  const CgroupLimits l = read_cgroup_limits(host);
  EXPECT_EQ(l.version, 2);
  EXPECT_FALSE(l.cpu_quota);
  EXPECT_FALSE(l.memory_limit);
}

TEST(CgroupV2, TightestLimitOnThePathToTheRootBinds) {
  // A systemd host: the process is in a leaf under a slice; the slice carries the quota.
  FakeHost host;
  host.files["/proc/self/mountinfo"] =
      "30 22 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n";
  host.files["/proc/self/cgroup"] = "0::/user.slice/job.scope\n";
  host.files["/sys/fs/cgroup/cgroup.controllers"] = "cpu memory\n";
  host.files["/sys/fs/cgroup/user.slice/job.scope/cpu.max"] = "max 100000\n";
  host.files["/sys/fs/cgroup/user.slice/cpu.max"] = "200000 100000\n";
  host.files["/sys/fs/cgroup/user.slice/job.scope/memory.max"] = "2147483648\n";
  host.files["/sys/fs/cgroup/user.slice/memory.max"] = "8589934592\n";
  host.files["/sys/fs/cgroup/user.slice/job.scope/memory.current"] = "1000\n";
  const CgroupLimits l = read_cgroup_limits(host);
  ASSERT_TRUE(l.cpu_quota);
  EXPECT_DOUBLE_EQ(*l.cpu_quota, 2.0);
  EXPECT_EQ(l.cpu_source, "/sys/fs/cgroup/user.slice/cpu.max");
  ASSERT_TRUE(l.memory_limit);
  EXPECT_EQ(*l.memory_limit, 2147483648u);
  EXPECT_EQ(l.memory_source, "/sys/fs/cgroup/user.slice/job.scope/memory.max");
  EXPECT_EQ(l.memory_used.value_or(0), 1000u);
}

TEST(CgroupV1, QuotaFromCfsFilesInTheProcessCgroup) {
  FakeHost host;
  host.make_v1_host();
  host.files["/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us"] = "100000\n";
  host.files["/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us"] = "100000\n";
  host.files["/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us"] = "-1\n";
  host.files["/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us"] = "100000\n";
  host.files["/sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes"] = "536870912\n";
  host.files["/sys/fs/cgroup/memory/docker/abc/memory.usage_in_bytes"] = "300000000\n";
  host.files["/sys/fs/cgroup/memory/docker/abc/memory.stat"] =
      "cache 5\ntotal_inactive_file 100000000\n";
  host.files["/sys/fs/cgroup/memory/memory.limit_in_bytes"] = "9223372036854771712\n";
  const CgroupLimits l = read_cgroup_limits(host);
  EXPECT_EQ(l.version, 1);  // hybrid: cgroup2 is mounted but governs neither cpu nor memory
  ASSERT_TRUE(l.cpu_quota);
  EXPECT_DOUBLE_EQ(*l.cpu_quota, 1.0);
  ASSERT_TRUE(l.memory_limit);
  EXPECT_EQ(*l.memory_limit, 536870912u);
  EXPECT_EQ(l.memory_used.value_or(0), 200000000u);
}

TEST(CgroupV1, UnlimitedIsThePageRoundedMaximum) {
  FakeHost host;
  host.make_v1_host("/");
  host.files["/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us"] = "-1\n";
  host.files["/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us"] = "100000\n";
  host.files["/sys/fs/cgroup/memory/memory.limit_in_bytes"] = "9223372036854771712\n";
  const CgroupLimits l = read_cgroup_limits(host);
  EXPECT_FALSE(l.cpu_quota);
  EXPECT_FALSE(l.memory_limit);
}

TEST(CgroupV1, ContainerWithoutNamespaceSeesItsCgroupAsTheMountRoot) {
  // Docker on cgroup v1 without a cgroup namespace: /proc/self/cgroup says /docker/abc, but the
  // container's mount of the hierarchy starts at /docker/abc.
  FakeHost host;
  host.files["/proc/self/mountinfo"] =
      "700 690 0:29 /docker/abc /sys/fs/cgroup/cpu ro,nosuid - cgroup cgroup rw,cpu\n"
      "701 690 0:32 /docker/abc /sys/fs/cgroup/memory ro,nosuid - cgroup cgroup rw,memory\n";
  host.files["/proc/self/cgroup"] = "4:cpu:/docker/abc\n12:memory:/docker/abc\n";
  host.files["/sys/fs/cgroup/cpu/cpu.cfs_quota_us"] = "250000\n";
  host.files["/sys/fs/cgroup/cpu/cpu.cfs_period_us"] = "100000\n";
  host.files["/sys/fs/cgroup/memory/memory.limit_in_bytes"] = "1073741824\n";
  const CgroupLimits l = read_cgroup_limits(host);
  ASSERT_TRUE(l.cpu_quota);
  EXPECT_DOUBLE_EQ(*l.cpu_quota, 2.5);
  ASSERT_TRUE(l.memory_limit);
  EXPECT_EQ(*l.memory_limit, 1073741824u);
}

TEST(Cgroup, NoCgroupAtAllIsNoLimit) {
  FakeHost host;  // no files at all: no /proc, no /sys/fs/cgroup
  const CgroupLimits l = read_cgroup_limits(host);
  EXPECT_FALSE(l.cpu_quota);
  EXPECT_FALSE(l.memory_limit);
  EXPECT_FALSE(l.memory_used);
}

TEST(Cgroup, MalformedFilesAreIgnoredNotTrusted) {
  FakeHost host;
  host.make_v2_container();
  host.files["/sys/fs/cgroup/cpu.max"] = "garbage\n";
  host.files["/sys/fs/cgroup/memory.max"] = "-5\n";
  const CgroupLimits l = read_cgroup_limits(host);
  EXPECT_FALSE(l.cpu_quota);
  EXPECT_FALSE(l.memory_limit);
}

TEST(CgroupMounts, ParsesControllersAndOctalEscapes) {
  const auto mounts = parse_cgroup_mounts(
      "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
      "33 31 0:30 /a\\040b /mnt/my\\040cg rw shared:5 - cgroup2 none rw\n"
      "22 1 0:21 / /proc rw - proc proc rw\n");
  ASSERT_EQ(mounts.size(), 2u);
  EXPECT_EQ(mounts[0].mount_point, "/sys/fs/cgroup/cpu,cpuacct");
  EXPECT_EQ(mounts[0].controllers, (std::vector<std::string>{"cpu", "cpuacct"}));
  EXPECT_EQ(mounts[1].fs_type, "cgroup2");
  EXPECT_EQ(mounts[1].root, "/a b");
  EXPECT_EQ(mounts[1].mount_point, "/mnt/my cg");
}

}  // namespace
}  // namespace dl::test
