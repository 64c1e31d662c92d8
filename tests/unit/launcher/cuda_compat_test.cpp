// The driver-versus-CUDA rule (launcher/cuda_compat.h) and its place in the plan: a lower major
// is refused with the driver to install, a lower minor of the same major warns, a driver that
// is new enough or does not say passes.
#include "launcher/cuda_compat.h"

#include <gtest/gtest.h>

#include "core/errors.h"
#include "launcher/plan.h"
#include "support/matchers.h"

namespace dl::test {
namespace {

GpuReport driver(const std::string& version, int cuda) {
  GpuReport g;
  g.available = true;
  g.note = "NVML " + version;
  g.driver_version = version;
  g.cuda_driver_version = cuda;
  GpuInfo t4;
  t4.name = "Tesla T4";
  t4.total_bytes = 15ull << 30;
  t4.free_bytes = 14ull << 30;
  t4.cc_major = 7;
  t4.cc_minor = 5;
  g.gpus.push_back(t4);
  return g;
}

TEST(CudaVersion, ParsesTheImagesForms) {
  ASSERT_TRUE(parse_cuda_version("11.6.2"));
  EXPECT_EQ(parse_cuda_version("11.6.2")->major, 11);
  EXPECT_EQ(parse_cuda_version("11.6.2")->minor, 6);
  EXPECT_EQ(parse_cuda_version("12.1")->minor, 1);
  EXPECT_EQ(parse_cuda_version("12")->minor, 0);
  EXPECT_FALSE(parse_cuda_version(""));
  EXPECT_FALSE(parse_cuda_version("eleven"));
  EXPECT_FALSE(parse_cuda_version("11.6.2.1"));
  EXPECT_EQ(to_string(cuda_from_nvml(11040)), "11.4");
  EXPECT_EQ(to_string(cuda_from_nvml(12020)), "12.2");
  EXPECT_EQ(min_driver_for({11, 6}), "510.39.01");
  EXPECT_EQ(min_driver_for({9, 0}), "");
}

TEST(CudaVersion, DriverVersionsCompareByNumberNotText) {
  EXPECT_LT(compare_driver_versions("470.57.02", "510.39.01"), 0);
  EXPECT_GT(compare_driver_versions("450.100", "450.80.02"), 0);  // text order says otherwise
  EXPECT_EQ(compare_driver_versions("510.39", "510.39.0"), 0);
}

TEST(CudaDriver, NewEnoughOrUnknownPasses) {
  EXPECT_TRUE(check_cuda_driver(driver("535.104.05", 12020), "11.6.2", "CUDA_VERSION").ok);
  EXPECT_TRUE(check_cuda_driver(driver("510.47.03", 11060), "11.6.2", "CUDA_VERSION").ok);
  const DriverVerdict unknown = check_cuda_driver(driver("440.33.01", 0), "11.6.2", "x");
  EXPECT_TRUE(unknown.ok);
  EXPECT_EQ(unknown.message, "");
  EXPECT_EQ(check_cuda_driver(driver("510.47.03", 11060), "11.6.2", "x").message, "");
}

TEST(CudaDriver, LowerMajorIsRefusedWithTheDriverToInstall) {
  const DriverVerdict v = check_cuda_driver(driver("440.33.01", 10020), "11.6.2", "CUDA_VERSION");
  EXPECT_FALSE(v.ok);
  for (const char* m : {"440.33.01", "CUDA up to 10.2", "CUDA 11.6.2 (CUDA_VERSION)",
                        ">= 510.39.01 (CUDA 11.6 on Linux)", "--device cpu"}) {
    EXPECT_TRUE(contains(v.message, m)) << m << " not in: " << v.message;
  }
}

TEST(CudaDriver, LowerMinorRunsByMinorVersionCompatibilityWithAWarning) {
  const DriverVerdict v = check_cuda_driver(driver("470.57.02", 11040), "11.6.2", "CUDA_VERSION");
  EXPECT_TRUE(v.ok);
  EXPECT_TRUE(contains(v.message, "minor-version compatibility")) << v.message;
  EXPECT_TRUE(contains(v.message, ">= 510.39.01")) << v.message;
}

TEST(CudaDriver, BelowTheMinorCompatibilityFloorIsRefused) {
  // Driver 450.51 reports CUDA 11.0, but 11.x minor-version compatibility starts at 450.80.02.
  const DriverVerdict v = check_cuda_driver(driver("450.51.06", 11000), "11.6.2", "CUDA_VERSION");
  EXPECT_FALSE(v.ok);
  EXPECT_TRUE(contains(v.message, "450.80.02")) << v.message;
}

TEST(CudaDriver, ThePlanRefusesOrWarnsOnlyForAGpuDevice) {
  Facts facts;
  facts.cpu.usable = 4;
  facts.memory.usable = 16ull << 30;
  facts.gpu = driver("440.33.01", 10020);
  Request r;
  r.required_cuda = Sourced<std::string>{"11.6.2", "CUDA_VERSION"};
  try {
    make_plan(facts, r);
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.code(), exit_code::kUnavailable);
    EXPECT_TRUE(contains(e.what(), "cuda:0")) << e.what();
  }
  r.device = {"cpu", "--device"};
  EXPECT_EQ(make_plan(facts, r).device.value, "cpu");

  facts.gpu = driver("470.57.02", 11040);
  r.device = {"auto", "default"};
  const Plan p = make_plan(facts, r);
  EXPECT_EQ(p.device.value, "cuda:0");
  ASSERT_FALSE(p.warnings.empty());
  EXPECT_TRUE(contains(p.warnings.front(), "minor-version compatibility")) << p.warnings.front();

  r.required_cuda.reset();
  facts.gpu = driver("440.33.01", 10020);
  EXPECT_EQ(make_plan(facts, r).device.value, "cuda:0");
}

}  // namespace
}  // namespace dl::test
