// NVML through dlopen: a missing library is a CPU machine, a fake driver library is read through
// the real loading path.
#include "core/nvml.h"
#include "support/build_paths.h"

#include <gtest/gtest.h>
#include <stdlib.h>

namespace dl::test {
namespace {

TEST(Nvml, MissingLibraryIsACpuMachineNotAnError) {
  const GpuReport r = query_nvml("libnvidia-ml-does-not-exist.so.1");
  EXPECT_FALSE(r.available);
  EXPECT_TRUE(r.gpus.empty());
  EXPECT_NE(r.note.find("NVML not found"), std::string::npos) << r.note;
}

TEST(Nvml, LibraryWithoutTheSymbolsIsRefused) {
  const GpuReport r = query_nvml("libm.so.6");
  EXPECT_FALSE(r.available);
  EXPECT_NE(r.note.find("incomplete"), std::string::npos) << r.note;
}

class FakeNvml : public ::testing::Test {
 protected:
  void TearDown() override {
    unsetenv("FAKE_NVML_GPUS");
    unsetenv("FAKE_NVML_INIT_FAIL");
    unsetenv("FAKE_NVML_DRIVER");
    unsetenv("FAKE_NVML_CUDA");
  }
};

TEST_F(FakeNvml, ReadsEveryGpu) {
  setenv("FAKE_NVML_GPUS",
         "Tesla V100-SXM2-16GB,7,0,16384,16000;NVIDIA A100-SXM4-80GB,8,0,81920,80000", 1);
  const GpuReport r = query_nvml(dl::test::kFakeNvml);
  ASSERT_TRUE(r.available) << r.note;
  ASSERT_EQ(r.gpus.size(), 2u);
  EXPECT_EQ(r.driver_version, "535.104.05");
  EXPECT_EQ(r.gpus[0].name, "Tesla V100-SXM2-16GB");
  EXPECT_EQ(r.gpus[0].cc_major, 7);
  EXPECT_EQ(r.gpus[0].total_bytes, 16384ull << 20);
  EXPECT_EQ(r.gpus[0].free_bytes, 16000ull << 20);
  EXPECT_EQ(r.gpus[1].index, 1);
  EXPECT_EQ(r.gpus[1].cc_major, 8);
}

TEST_F(FakeNvml, ReadsTheDriversCudaVersion) {
  setenv("FAKE_NVML_GPUS", "Tesla T4,7,5,15360,15000", 1);
  EXPECT_EQ(query_nvml(dl::test::kFakeNvml).cuda_driver_version, 12020);
  setenv("FAKE_NVML_DRIVER", "470.57.02", 1);
  setenv("FAKE_NVML_CUDA", "11040", 1);
  const GpuReport r = query_nvml(dl::test::kFakeNvml);
  EXPECT_EQ(r.driver_version, "470.57.02");
  EXPECT_EQ(r.cuda_driver_version, 11040);
  // A driver that cannot say is unknown (0), not an error.
  setenv("FAKE_NVML_CUDA", "none", 1);
  const GpuReport unknown = query_nvml(dl::test::kFakeNvml);
  EXPECT_TRUE(unknown.available);
  EXPECT_EQ(unknown.cuda_driver_version, 0);
}

TEST_F(FakeNvml, DriverWithoutGpus) {
  const GpuReport r = query_nvml(dl::test::kFakeNvml);
  EXPECT_FALSE(r.available);
  EXPECT_NE(r.note.find("no GPU"), std::string::npos) << r.note;
}

TEST_F(FakeNvml, InitFailureIsReported) {
  setenv("FAKE_NVML_INIT_FAIL", "1", 1);
  const GpuReport r = query_nvml(dl::test::kFakeNvml);
  EXPECT_FALSE(r.available);
  EXPECT_NE(r.note.find("Driver Not Loaded"), std::string::npos) << r.note;
}

TEST_F(FakeNvml, UtilizationForTheMonitor) {
  setenv("FAKE_NVML_GPUS", "Tesla T4,7,5,15360,15000", 1);
  std::string why;
  auto nvml = Nvml::open(dl::test::kFakeNvml, &why);
  ASSERT_TRUE(nvml) << why;
  const auto u = nvml->utilization(0);
  ASSERT_TRUE(u);
  EXPECT_EQ(u->total_bytes, 15360ull << 20);
  EXPECT_FALSE(nvml->utilization(5));
}

}  // namespace
}  // namespace dl::test
