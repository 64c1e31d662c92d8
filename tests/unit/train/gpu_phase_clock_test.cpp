// The GPU's phase clock: the host's step seconds split as the stream spent them (a pure function,
// tested everywhere), and on a CUDA device (tests/gpu/gpu_check.sh runs this program there) CUDA
// events that see a heavy phase as heavy, count only completed steps and drop an unfinished one.
#include "train/amp/gpu_phase_clock.h"

#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/types.h>

#include "train/amp/cuda_support.h"

namespace dl::test {
namespace {

using train::GpuPhaseClock;
using train::GpuPhaseTimes;
using train::split_step_seconds;
using train::StepMark;

TEST(GpuPhaseClock, SplitsTheHostsStepSecondsAsTheStreamSpentThem) {
  GpuPhaseTimes gpu;
  gpu.copy_ms = 10;
  gpu.compute_ms = 70;
  gpu.optimizer_ms = 20;
  gpu.steps = 4;
  // The host's 2 s are kept and divided 10:70:20, whatever the GPU's own sum (100 ms here).
  const train::StepSplit s = split_step_seconds(2.0, gpu);
  EXPECT_DOUBLE_EQ(s.copy, 0.2);
  EXPECT_DOUBLE_EQ(s.optimizer, 0.4);
  EXPECT_DOUBLE_EQ(s.compute, 1.4);
  EXPECT_DOUBLE_EQ(s.copy + s.compute + s.optimizer, 2.0);
  // Nothing measured on the GPU: all of it is compute, as without events.
  const train::StepSplit none = split_step_seconds(1.5, GpuPhaseTimes());
  EXPECT_EQ(none.copy, 0);
  EXPECT_EQ(none.optimizer, 0);
  EXPECT_DOUBLE_EQ(none.compute, 1.5);
  // A negative host figure (an exchange wait larger than the steps, by rounding) splits nothing.
  const train::StepSplit negative = split_step_seconds(-0.01, gpu);
  EXPECT_EQ(negative.copy + negative.compute + negative.optimizer, 0);
}

TEST(GpuPhaseClock, AvailableExactlyWhereCudaSupportIsCompiledIn) {
  EXPECT_EQ(GpuPhaseClock::available(), train::cuda::compiled());
  if (GpuPhaseClock::available()) return;
  // Without CUDA support the clock records nothing and takes nothing.
  GpuPhaseClock clock(0);
  clock.mark(StepMark::kStart);
  clock.mark(StepMark::kCopied);
  clock.mark(StepMark::kBackwardDone);
  clock.mark(StepMark::kOptimized);
  const GpuPhaseTimes t = clock.take();
  EXPECT_EQ(t.steps, 0);
  EXPECT_EQ(t.copy_ms + t.compute_ms + t.optimizer_ms, 0);
}

TEST(GpuPhaseClock, EventsSeeTheHeavyPhaseOnTheDevice) {
  if (!GpuPhaseClock::available() || !torch::cuda::is_available()) {
    GTEST_SKIP() << "no CUDA device (or a CPU-only LibTorch): the events run in tests/gpu";
  }
  const auto cuda = torch::TensorOptions().device(torch::kCUDA);
  const at::Tensor a = torch::randn({2048, 2048}, cuda);
  const at::Tensor small = torch::ones({256});
  at::Tensor weights = torch::zeros({256}, cuda);
  GpuPhaseClock clock(0);
  for (int step = 0; step < 5; ++step) {
    clock.mark(StepMark::kStart);
    const at::Tensor x = small.to(torch::kCUDA, /*non_blocking=*/true);  // a small copy
    clock.mark(StepMark::kCopied);
    at::Tensor y = a;
    for (int i = 0; i < 20; ++i) y = torch::mm(a, y) * 1e-3;  // heavy: 20 matmuls of 2048^2
    clock.mark(StepMark::kBackwardDone);
    weights.add_(x);  // light
    clock.mark(StepMark::kOptimized);
  }
  // A step begun and left (an exception mid-step) is not counted.
  clock.mark(StepMark::kStart);
  clock.mark(StepMark::kCopied);
  const GpuPhaseTimes t = clock.take();
  EXPECT_EQ(t.steps, 5);
  EXPECT_GT(t.compute_ms, 10 * t.copy_ms);
  EXPECT_GT(t.compute_ms, 10 * t.optimizer_ms);
  EXPECT_GT(t.compute_ms, 0);
  // 100 matmuls of 2 x 2048^3 flops in that many ms: no GPU does them in under 0.1 ms.
  EXPECT_GT(t.compute_ms, 0.1);
  // take() resets: the next epoch starts from nothing.
  EXPECT_EQ(clock.take().steps, 0);
}

}  // namespace
}  // namespace dl::test
