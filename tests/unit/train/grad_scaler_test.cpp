// GradScaler against PyTorch's semantics (torch/cuda/amp/grad_scaler.py and the kernel of
// _amp_update_scale_): exact scale and growth-tracker sequences for overflow -> backoff and
// growth after `interval` clean steps (a small interval, and the real 2000); a step with an inf
// or NaN gradient skipped with weights and optimizer state untouched; gradients after unscale
// equal to the fp32 ones, so clipping sees the true norm; the state through a checkpoint file
// under Python's names. The plain implementation runs here (the CPU); tests/gpu checks the fused
// CUDA ops give the same sequences.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>
#include <torch/serialize.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "model/adamw_state.h"
#include "model/checkpoint.h"
#include "support/temp_dir.h"
#include "train/amp/grad_scaler.h"
#include "unit/train/train_test_support.h"

namespace dl::test {
namespace {

using namespace dl::train;

const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

// One parameter of 4 elements under SGD: gradients are set by hand, so each step's found_inf is
// chosen exactly.
class ScalerSteps : public ::testing::Test {
 protected:
  ScalerSteps() : weight(torch::ones({4}, torch::requires_grad())), sgd({weight}, 0.1) {}

  // One iteration: gradient (scaled, as backward would leave it), unscale, step, update.
  // Returns whether the optimizer step ran.
  bool iterate(GradScaler& scaler, float value) {
    weight.mutable_grad() = torch::full({4}, value);
    scaler.unscale(sgd);
    const bool stepped = scaler.step(sgd);
    scaler.update();
    return stepped;
  }

  at::Tensor weight;
  torch::optim::SGD sgd;
};

ScalerOptions enabled_options() {
  ScalerOptions o;
  o.enabled = true;
  return o;
}

TEST_F(ScalerSteps, DefaultsArePyTorchs) {
  GradScaler scaler(enabled_options(), torch::kCPU);
  EXPECT_EQ(scaler.current_scale(), 65536.0);
  EXPECT_EQ(scaler.growth_tracker(), 0);
  EXPECT_FALSE(scaler.fused());  // the CPU has no kernels for the fused ops in LibTorch 1.13
  const model::ScalerState s = scaler.state();
  EXPECT_TRUE(s.enabled);
  EXPECT_EQ(s.growth_factor, 2.0);
  EXPECT_EQ(s.backoff_factor, 0.5);
  EXPECT_EQ(s.growth_interval, 2000);
}

TEST_F(ScalerSteps, OverflowBacksOffAndCleanStepsGrowWithASmallInterval) {
  ScalerOptions o = enabled_options();
  o.init_scale = 1024;
  o.growth_interval = 3;
  GradScaler scaler(o, torch::kCPU);
  // Gradients: clean x3 (grow), clean, inf (back off, tracker reset), clean x3 (grow), NaN, NaN.
  const std::vector<float> grads = {1, 1, 1, 1, kInf, 1, 1, 1, kNaN, kNaN};
  const std::vector<double> scales = {1024, 1024, 2048, 2048, 1024, 1024, 1024, 2048, 1024, 512};
  const std::vector<std::int64_t> trackers = {1, 2, 0, 1, 0, 1, 2, 0, 0, 0};
  const std::vector<bool> stepped = {true, true, true, true, false, true, true, true, false, false};
  for (std::size_t i = 0; i < grads.size(); ++i) {
    EXPECT_EQ(iterate(scaler, grads[i]), stepped[i]) << "iteration " << i;
    EXPECT_EQ(scaler.current_scale(), scales[i]) << "iteration " << i;
    EXPECT_EQ(scaler.growth_tracker(), trackers[i]) << "iteration " << i;
  }
}

TEST_F(ScalerSteps, GrowsAfterExactly2000CleanStepsWithTheDefaults) {
  GradScaler scaler(enabled_options(), torch::kCPU);
  for (int i = 1; i < 2000; ++i) ASSERT_TRUE(iterate(scaler, 1));
  EXPECT_EQ(scaler.current_scale(), 65536.0);
  EXPECT_EQ(scaler.growth_tracker(), 1999);
  iterate(scaler, 1);
  EXPECT_EQ(scaler.current_scale(), 131072.0);
  EXPECT_EQ(scaler.growth_tracker(), 0);
  // An overflow one step before the next growth resets the count.
  for (int i = 1; i < 2000; ++i) iterate(scaler, 1);
  EXPECT_FALSE(iterate(scaler, kInf));
  EXPECT_EQ(scaler.current_scale(), 65536.0);
  EXPECT_EQ(scaler.growth_tracker(), 0);
}

TEST_F(ScalerSteps, NeverGrowsPastTheLargestFloat) {
  ScalerOptions o = enabled_options();
  o.init_scale = std::ldexp(1.0, 127);
  o.growth_interval = 1;
  GradScaler scaler(o, torch::kCPU);
  iterate(scaler, 1);
  // 2^128 is inf in float32: the kernel keeps the scale and still resets the tracker.
  EXPECT_EQ(scaler.current_scale(), std::ldexp(1.0, 127));
  EXPECT_EQ(scaler.growth_tracker(), 0);
}

TEST_F(ScalerSteps, UnscaleMultipliesByTheReciprocalOfTheScale) {
  ScalerOptions o = enabled_options();
  o.init_scale = 8;
  GradScaler scaler(o, torch::kCPU);
  weight.mutable_grad() = torch::tensor({8.0f, -16.0f, 4.0f, 0.0f});
  scaler.unscale(sgd);
  EXPECT_TRUE(weight.grad().equal(torch::tensor({1.0f, -2.0f, 0.5f, 0.0f})));
  EXPECT_THROW(scaler.unscale(sgd), std::logic_error);  // twice in one step, as Python refuses
  scaler.step(sgd);
  EXPECT_THROW(scaler.step(sgd), std::logic_error);
  scaler.update();
}

TEST(GradScaler, DisabledPassesEverythingThrough) {
  at::Tensor w = torch::ones({2}, torch::requires_grad());
  torch::optim::SGD sgd({w}, 1.0);
  GradScaler scaler(ScalerOptions{}, torch::kCPU);
  const at::Tensor loss = torch::tensor(3.0f);
  EXPECT_TRUE(scaler.scale(loss).is_same(loss));
  w.mutable_grad() = torch::full({2}, kInf);
  EXPECT_TRUE(scaler.step(sgd));  // no inf check without loss scaling: fp32 steps as it is
  scaler.update();
  EXPECT_EQ(scaler.current_scale(), 1.0);
  EXPECT_FALSE(scaler.state().enabled);
}

// A NaN gradient skips AdamW's step: weights and the optimizer's state stay exactly as they were.
TEST(GradScaler, SkippedStepLeavesWeightsAndOptimizerStateUntouched) {
  at::Tensor w = torch::linspace(-1, 1, 6).requires_grad_();
  torch::optim::AdamW adamw({w}, torch::optim::AdamWOptions(0.1));
  GradScaler scaler(enabled_options(), torch::kCPU);

  // A first step that is skipped creates no optimizer state at all.
  w.mutable_grad() = torch::tensor({1.0f, kNaN, 1.0f, 1.0f, 1.0f, 1.0f});
  const at::Tensor before = w.detach().clone();
  EXPECT_FALSE(scaler.step(adamw));
  scaler.update();
  EXPECT_TRUE(w.detach().equal(before));
  EXPECT_TRUE(model::export_adamw(adamw, {w}).state.empty());

  // After a clean step, a skipped one changes neither the weights nor exp_avg/exp_avg_sq/step.
  w.mutable_grad() = torch::full({6}, 65536.0f);
  EXPECT_TRUE(scaler.step(adamw));
  scaler.update();
  const at::Tensor weights = w.detach().clone();
  const model::OptimizerState state = model::export_adamw(adamw, {w});
  w.mutable_grad() = torch::full({6}, kInf);
  EXPECT_FALSE(scaler.step(adamw));
  scaler.update();
  EXPECT_TRUE(w.detach().equal(weights));
  const model::OptimizerState after = model::export_adamw(adamw, {w});
  ASSERT_EQ(after.state.size(), 1u);
  EXPECT_EQ(after.state.at(0).step, state.state.at(0).step);
  EXPECT_TRUE(after.state.at(0).exp_avg.equal(state.state.at(0).exp_avg));
  EXPECT_TRUE(after.state.at(0).exp_avg_sq.equal(state.state.at(0).exp_avg_sq));
}

// Backward of the scaled loss then unscale gives the fp32 gradients (a power-of-two scale is
// exact), so gradient clipping after unscale sees the true norm.
TEST(GradScaler, GradientsAfterUnscaleEqualTheFp32OnesSoClippingSeesTheTrueNorm) {
  torch::set_num_threads(1);  // one summation order for both backward passes
  auto net = make_cnn();
  auto params = net->parameters();
  torch::optim::SGD sgd(params, 0.1);
  const auto [images, labels] = make_batch(16);

  sgd.zero_grad();
  torch::nn::functional::cross_entropy(net->forward(images), labels).backward();
  std::vector<at::Tensor> fp32;
  for (const auto& p : params) fp32.push_back(p.grad().clone());
  const double fp32_norm = torch::nn::utils::clip_grad_norm_(params, 1e9);

  GradScaler scaler(enabled_options(), torch::kCPU);
  sgd.zero_grad();
  scaler.scale(torch::nn::functional::cross_entropy(net->forward(images), labels)).backward();
  std::vector<at::Tensor> scaled;
  for (const auto& p : params) scaled.push_back(p.grad().clone());
  scaler.unscale(sgd);
  std::vector<at::Tensor> unscaled;
  for (const auto& p : params) unscaled.push_back(p.grad().clone());

  EXPECT_LE(max_abs_diff(unscaled, fp32), 1e-9);
  // Before unscaling the norm is 65536 times too large: clipping there would clip everything.
  EXPECT_NEAR(torch::nn::utils::clip_grad_norm_(params, 1e9), fp32_norm, 1e-6 * fp32_norm);
  double scaled_sq = 0;
  for (const auto& g : scaled) scaled_sq += g.to(at::kDouble).pow(2).sum().item<double>();
  EXPECT_NEAR(std::sqrt(scaled_sq), 65536.0 * fp32_norm, 1e-3 * 65536.0 * fp32_norm);
}

// The state goes through a checkpoint file under Python's GradScaler.state_dict() names, and a
// scaler restored from it continues the same sequence.
TEST(GradScaler, StateRoundTripsThroughACheckpointUnderPythonsNames) {
  at::Tensor w = torch::ones({1}, torch::requires_grad());
  torch::optim::SGD sgd({w}, 0.1);
  ScalerOptions o = enabled_options();
  o.growth_interval = 7;
  o.backoff_factor = 0.25;
  GradScaler scaler(o, torch::kCPU);
  auto iterate = [&](GradScaler& s, float g) {
    w.mutable_grad() = torch::full({1}, g);
    s.step(sgd);
    s.update();
  };
  for (float g : {1.0f, kInf, 1.0f, 1.0f, 1.0f}) iterate(scaler, g);  // scale 16384, tracker 3

  TempDir dir;
  model::CheckpointData c;
  c.model_state = {{"w", w.detach()}};
  c.scaler = scaler.state();
  model::save_checkpoint(dir / "scaler.pt", c);

  // The file holds what torch.load gives Python: these keys, with float and int values.
  std::ifstream in(dir / "scaler.pt", std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
  const auto top = torch::pickle_load(bytes).toGenericDict();
  const auto saved = top.at("scaler_state_dict").toGenericDict();
  std::set<std::string> keys;
  for (const auto& item : saved) keys.insert(item.key().toStringRef());
  EXPECT_EQ(keys, (std::set<std::string>{"scale", "growth_factor", "backoff_factor",
                                         "growth_interval", "_growth_tracker"}));
  EXPECT_EQ(saved.at("scale").toDouble(), 16384.0);
  EXPECT_EQ(saved.at("backoff_factor").toDouble(), 0.25);
  EXPECT_EQ(saved.at("growth_interval").toInt(), 7);
  EXPECT_EQ(saved.at("_growth_tracker").toInt(), 3);

  // Restored into a scaler built with the defaults: the checkpoint's factors win, as in Python.
  GradScaler restored(enabled_options(), torch::kCPU);
  restored.load(model::load_checkpoint(dir / "scaler.pt").scaler);
  for (float g : {1.0f, 1.0f, 1.0f, 1.0f, kNaN, 1.0f}) {
    iterate(scaler, g);
    iterate(restored, g);
    EXPECT_EQ(restored.current_scale(), scaler.current_scale());
    EXPECT_EQ(restored.growth_tracker(), scaler.growth_tracker());
  }

  // A disabled scaler saves {} (as Python), which an enabled one refuses to load.
  model::CheckpointData plain = c;
  plain.scaler = GradScaler(ScalerOptions{}, torch::kCPU).state();
  model::save_checkpoint(dir / "plain.pt", plain);
  const model::ScalerState empty = model::load_checkpoint(dir / "plain.pt").scaler;
  EXPECT_FALSE(empty.enabled);
  EXPECT_THROW(restored.load(empty), std::invalid_argument);
}

}  // namespace
}  // namespace dl::test
