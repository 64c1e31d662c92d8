// Autocast and precision: the compatibility layer's guard switches autocast on for a device type
// and restores the previous state (nested too); under it a CPU matmul really runs in bf16; the
// precision resolution rules (auto, fp16 on the CPU refused with exit 64); and a few training
// steps of the small CNN under bf16 autocast track fp32's losses within a stated tolerance.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/optim/adamw.h>
#include <torch/types.h>

#include <cmath>
#include <vector>

#include "core/errors.h"
#include "train/amp/autocast.h"
#include "train/amp/grad_scaler.h"
#include "train/amp/precision.h"
#include "train/amp/train_step.h"
#include "unit/train/train_test_support.h"

namespace dl::test {
namespace {

using namespace dl::train;

TEST(Autocast, GuardEnablesTheDeviceTypeAndRestoresTheStateNested) {
  const AutocastState outside = autocast_state(c10::DeviceType::CPU);
  ASSERT_FALSE(outside.enabled);
  {
    AutocastGuard outer(c10::DeviceType::CPU, c10::ScalarType::BFloat16);
    EXPECT_TRUE(autocast_state(c10::DeviceType::CPU).enabled);
    EXPECT_EQ(autocast_state(c10::DeviceType::CPU).dtype, c10::ScalarType::BFloat16);
    {
      // The CUDA flags are thread-local state even in a CPU-only build: settable, and apart.
      AutocastGuard inner(c10::DeviceType::CUDA, c10::ScalarType::Half);
      EXPECT_TRUE(autocast_state(c10::DeviceType::CUDA).enabled);
      EXPECT_EQ(autocast_state(c10::DeviceType::CUDA).dtype, c10::ScalarType::Half);
      EXPECT_TRUE(autocast_state(c10::DeviceType::CPU).enabled);
    }
    EXPECT_FALSE(autocast_state(c10::DeviceType::CUDA).enabled);
    EXPECT_TRUE(autocast_state(c10::DeviceType::CPU).enabled);
  }
  EXPECT_FALSE(autocast_state(c10::DeviceType::CPU).enabled);
  EXPECT_EQ(autocast_state(c10::DeviceType::CPU).dtype, outside.dtype);
}

TEST(Autocast, CpuMatmulRunsInBf16UnderTheGuardOnly) {
  const at::Tensor a = torch::randn({8, 8});
  {
    AutocastGuard guard(c10::DeviceType::CPU, c10::ScalarType::BFloat16);
    EXPECT_EQ(torch::mm(a, a).scalar_type(), torch::kBFloat16);
  }
  EXPECT_EQ(torch::mm(a, a).scalar_type(), torch::kFloat);
}

TEST(Autocast, UnsupportedDeviceTypeIsRefused) {
  EXPECT_THROW(autocast_state(c10::DeviceType::Vulkan), std::invalid_argument);
}

TEST(Precision, AutoOnTheCpuIsFp32AndExplicitChoicesAreKept) {
  EXPECT_EQ(resolve_precision("auto", "default", torch::kCPU).precision, Precision::kFp32);
  EXPECT_EQ(resolve_precision("fp32", "--precision", torch::kCPU).precision, Precision::kFp32);
  const PrecisionChoice bf16 = resolve_precision("bf16", "DL_PRECISION", torch::kCPU);
  EXPECT_EQ(bf16.precision, Precision::kBf16);
  EXPECT_EQ(bf16.reason, "from DL_PRECISION");
  EXPECT_TRUE(uses_autocast(Precision::kBf16));
  EXPECT_FALSE(uses_scaler(Precision::kBf16));
  EXPECT_TRUE(uses_scaler(Precision::kFp16));
  EXPECT_EQ(autocast_dtype(Precision::kFp16), c10::ScalarType::Half);
}

TEST(Precision, Fp16OnTheCpuExits64NamingTheSource) {
  try {
    resolve_precision("fp16", "DL_PRECISION", torch::kCPU);
    FAIL() << "fp16 on the CPU was accepted";
  } catch (const UserError& e) {
    EXPECT_EQ(e.code(), exit_code::kUsage);
    EXPECT_NE(std::string(e.what()).find("DL_PRECISION: fp16 needs a CUDA device"),
              std::string::npos)
        << e.what();
  }
}

// Losses of `steps` AdamW steps of the CNN (same initial weights, same batch) in `precision`.
std::vector<double> losses(Precision precision, int steps) {
  auto net = make_cnn();
  auto params = net->parameters();
  torch::optim::AdamW adamw(params, torch::optim::AdamWOptions(1e-3));
  GradScaler scaler(ScalerOptions{}, torch::kCPU);
  StepRunner runner(*net, adamw, params, scaler, precision, torch::kCPU, 1.0);
  const auto [images, labels] = make_batch(64);
  std::vector<double> out;
  for (int i = 0; i < steps; ++i) {
    const StepResult r = runner.train(images, labels);
    out.push_back(r.totals.loss_sum.item<double>() / 64.0);
  }
  return out;
}

// bf16 keeps 8 bits of mantissa (relative rounding 2^-9, about 0.2%) in the convolutions and the
// linear layer; the loss itself is computed in fp32. Over 5 steps the losses stay within 0.5% of
// fp32's (measured on the development machine: at most 0.033%), and go down as fp32's do.
TEST(Precision, Bf16TrainingStepsTrackFp32WithinHalfAPercent) {
  const auto fp32 = losses(Precision::kFp32, 5);
  const auto bf16 = losses(Precision::kBf16, 5);
  for (std::size_t i = 0; i < fp32.size(); ++i) {
    EXPECT_NEAR(bf16[i], fp32[i], 0.005 * fp32[i]) << "step " << i;
    EXPECT_NE(bf16[i], fp32[i]) << "step " << i << ": bf16 ran in fp32";
  }
  EXPECT_LT(bf16.back(), bf16.front());
}

}  // namespace
}  // namespace dl::test
