// Out-of-memory survival: recognising an out-of-memory error (by type and by the messages of
// CUDA, the CPU allocator and cuDNN); micro-batch splitting and halving and the one log line;
// gradient accumulation (one step on the full batch against 2 micro-batches of half: the same
// weights within 1e-5); and the step retried in smaller pieces after an out-of-memory with the
// result of the full batch, or a clear error when single samples do not fit.
#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>
#include <torch/optim/adamw.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/errors.h"
#include "train/amp/grad_scaler.h"
#include "train/amp/micro_batch.h"
#include "train/amp/oom.h"
#include "train/amp/train_step.h"
#include "unit/train/train_test_support.h"

namespace dl::test {
namespace {

using namespace dl::train;

using Pieces = std::vector<std::pair<std::int64_t, std::int64_t>>;

TEST(OutOfMemory, RecognisedByTypeAndByMessage) {
  EXPECT_TRUE(is_out_of_memory(c10::OutOfMemoryError({"f", "file.cpp", 1}, "anything")));
  for (const char* m :
       {"CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.78 GiB total capacity)",
        "DefaultCPUAllocator: can't allocate memory: you tried to allocate 8589934592 bytes.",
        "cuDNN error: CUDNN_STATUS_NOT_SUPPORTED. This error may appear if you passed in a "
        "non-contiguous input.",
        "no valid convolution algorithms available in CuDNN",
        "CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`"}) {
    EXPECT_TRUE(is_out_of_memory(std::runtime_error(m))) << m;
  }
  for (const char* m :
       {"mat1 and mat2 shapes cannot be multiplied (64x3136 and 3137x10)",
        "operation not supported on this device", "CUDA error: device-side assert"}) {
    EXPECT_FALSE(is_out_of_memory(std::runtime_error(m))) << m;
  }
  // c10::Error's message, not its backtrace, is what counts: here what() names the function
  // "out of memory handler" (the constructor that every LibTorch line has in this form).
  const c10::Error error({"out of memory handler", "file.cpp", 1}, "index out of range");
  ASSERT_NE(std::string(error.what()).find("out of memory"), std::string::npos) << error.what();
  EXPECT_FALSE(is_out_of_memory(error));
}

TEST(OutOfMemory, ARealCpuAllocationFailureIsRecognised) {
  try {
    // 2^50 floats: no machine has that, and the allocation fails at once.
    const at::Tensor huge = at::empty({std::int64_t{1} << 50}, at::kFloat);
    FAIL() << "allocated " << huge.nbytes() << " bytes";
  } catch (const std::exception& e) {
    EXPECT_TRUE(is_out_of_memory(e)) << e.what();
  }
}

TEST(MicroBatching, SplitsHalvesAndSaysSo) {
  MicroBatching m;
  EXPECT_EQ(m.split(64), (Pieces{{0, 64}}));
  ASSERT_TRUE(m.shrink(64));
  EXPECT_EQ(m.split(64), (Pieces{{0, 32}, {32, 32}}));
  EXPECT_EQ(m.describe_shrink(64),
            "out of memory at batch 64: continuing with 2 micro-batches of 32 (gradient "
            "accumulation keeps the batch at 64)");
  EXPECT_EQ(m.split(40), (Pieces{{0, 32}, {32, 8}}));  // a shorter last batch
  EXPECT_EQ(m.split(20), (Pieces{{0, 20}}));

  MicroBatching odd;
  ASSERT_TRUE(odd.shrink(50));
  EXPECT_EQ(odd.limit(), 25);
  ASSERT_TRUE(odd.shrink(50));
  EXPECT_EQ(odd.split(50), (Pieces{{0, 13}, {13, 13}, {26, 13}, {39, 11}}));

  MicroBatching one(1);
  EXPECT_FALSE(one.shrink(64));
}

struct Trained {
  std::vector<at::Tensor> weights;
  std::vector<at::Tensor> grads;
  double loss = 0;
};

// One AdamW step (with clipping) of the CNN on a fixed batch of 64, split as `micro` says.
Trained one_step(model::Model& net, MicroBatching micro) {
  torch::set_num_threads(1);
  auto params = net.parameters();
  torch::optim::AdamW adamw(params, torch::optim::AdamWOptions(1e-3));
  GradScaler scaler(ScalerOptions{}, torch::kCPU);
  StepRunner runner(net, adamw, params, scaler, Precision::kFp32, torch::kCPU, 1.0, micro);
  const auto [images, labels] = make_batch(64);
  const StepResult r = runner.train(images, labels);
  Trained t;
  t.weights = clones(params);
  for (const auto& p : params) t.grads.push_back(p.grad().clone());
  t.loss = r.totals.loss_sum.item<double>() / 64.0;
  return t;
}

TEST(GradientAccumulation, TwoHalfBatchesGiveTheWeightsOfTheFullBatch) {
  auto a = make_cnn();
  auto b = make_cnn();
  const Trained full = one_step(*a, MicroBatching());
  const Trained halves = one_step(*b, MicroBatching(32));
  EXPECT_LE(max_abs_diff(halves.grads, full.grads), 1e-6);
  EXPECT_LE(max_abs_diff(halves.weights, full.weights), 1e-5);
  EXPECT_NEAR(halves.loss, full.loss, 1e-6);
}

TEST(OutOfMemoryRecovery, StepIsRetriedInSmallerPiecesWithTheFullBatchResult) {
  auto reference = make_cnn();
  const Trained full = one_step(*reference, MicroBatching());

  // Forwards above 16 samples fail: 64 -> 32 -> 16, two failures, then 4 pieces that fit.
  OomAboveModel limited(make_cnn(), 16);
  auto params = limited.parameters();
  torch::optim::AdamW adamw(params, torch::optim::AdamWOptions(1e-3));
  GradScaler scaler(ScalerOptions{}, torch::kCPU);
  StepRunner runner(limited, adamw, params, scaler, Precision::kFp32, torch::kCPU, 1.0);
  const auto [images, labels] = make_batch(64);
  testing::internal::CaptureStdout();
  const StepResult r = runner.train(images, labels);
  const std::string log = testing::internal::GetCapturedStdout();
  EXPECT_TRUE(r.stepped);
  EXPECT_EQ(limited.thrown(), 2);
  EXPECT_EQ(runner.micro().limit(), 16);
  EXPECT_LE(max_abs_diff(clones(params), full.weights), 1e-5);
  EXPECT_NEAR(r.totals.loss_sum.item<double>() / 64.0, full.loss, 1e-6);

  // Later batches go straight to the pieces that fit: no new failure.
  runner.train(images, labels);
  EXPECT_EQ(limited.thrown(), 2);

  // Evaluation uses the same pieces.
  torch::NoGradGuard no_grad;
  const BatchTotals eval = runner.evaluate(images, labels);
  EXPECT_EQ(limited.thrown(), 2);
  EXPECT_GT(eval.loss_sum.item<double>(), 0.0);
  // One line per halving, none for the batches after.
  EXPECT_NE(log.find("out of memory at batch 64: continuing with 2 micro-batches of 32"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("out of memory at batch 64: continuing with 4 micro-batches of 16"),
            std::string::npos)
      << log;
}

TEST(OutOfMemoryRecovery, SingleSamplesThatDoNotFitEndWithExit69) {
  OomAboveModel never(make_cnn(), 0);
  auto params = never.parameters();
  torch::optim::AdamW adamw(params, torch::optim::AdamWOptions(1e-3));
  GradScaler scaler(ScalerOptions{}, torch::kCPU);
  StepRunner runner(never, adamw, params, scaler, Precision::kFp32, torch::kCPU, 1.0);
  const auto [images, labels] = make_batch(8);
  try {
    runner.train(images, labels);
    FAIL() << "a step that never fits returned";
  } catch (const UserError& e) {
    EXPECT_EQ(e.code(), exit_code::kUnavailable);
    EXPECT_NE(std::string(e.what()).find("micro-batches of 1 sample"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(never.thrown(), 4);  // 8, 4, 2 and 1 samples
}

// Errors that are not about memory are not retried.
TEST(OutOfMemoryRecovery, OtherErrorsPassThrough) {
  auto net = make_cnn();
  auto params = net->parameters();
  torch::optim::AdamW adamw(params, torch::optim::AdamWOptions(1e-3));
  GradScaler scaler(ScalerOptions{}, torch::kCPU);
  StepRunner runner(*net, adamw, params, scaler, Precision::kFp32, torch::kCPU, 1.0);
  const at::Tensor wrong_shape = torch::randn({4, 3, 28, 28});
  EXPECT_THROW(runner.train(wrong_shape, torch::zeros({4}, torch::kLong)), c10::Error);
  EXPECT_EQ(runner.micro().limit(), 0);
}

}  // namespace
}  // namespace dl::test
