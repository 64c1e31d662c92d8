// make_model: output shapes, torchvision's parameter counts and names, strict state loading, and
// the errors for bad names and sizes.
#include "model/model.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace dl::test {
namespace {

using namespace dl::model;

using Shape = std::vector<int64_t>;

Shape output_shape(const ModelSpec& spec, int64_t batch) {
  auto model = make_model(spec);
  // Evaluation mode: BatchNorm then accepts a batch of one.
  model->set_training(false);
  at::NoGradGuard no_grad;
  const auto input = at::randn({batch, spec.in_channels, spec.input_size, spec.input_size});
  return model->forward(input).sizes().vec();
}

int64_t parameter_count(Model& model) {
  int64_t count = 0;
  for (const auto& param : model.parameters()) count += param.numel();
  return count;
}

std::vector<std::string> names(Model& model) {
  std::vector<std::string> result;
  for (const auto& entry : model.state()) result.push_back(entry.first);
  return result;
}

at::Tensor entry(Model& model, const std::string& name) {
  for (const auto& [key, tensor] : model.state()) {
    if (key == name) return tensor;
  }
  return {};
}

TEST(Cnn, MapsGreyImagesToClassScores) {
  EXPECT_EQ(output_shape({"cnn", 1, 10, 28}, 2), (Shape{2, 10}));
}

TEST(Cnn, FollowsTheInputSize) {
  EXPECT_EQ(output_shape({"cnn", 3, 100, 32}, 1), (Shape{1, 100}));
  auto model = make_model({"cnn", 3, 100, 32});
  EXPECT_EQ(entry(*model, "fc.weight").sizes().vec(), (Shape{100, 64 * 8 * 8}));
}

TEST(Cnn, HasThePythonModuleNames) {
  auto model = make_model({"cnn", 1, 10, 28});
  EXPECT_EQ(names(*model), (std::vector<std::string>{"conv1.weight", "conv1.bias", "conv2.weight",
                                                     "conv2.bias", "fc.weight", "fc.bias"}));
  EXPECT_EQ(model->parameters().size(), 6u);
  EXPECT_EQ(model->name(), "cnn");
}

TEST(ResNet, SmallInputsUseTheCifarStem) {
  EXPECT_EQ(output_shape({"resnet18", 3, 10, 32}, 2), (Shape{2, 10}));
  EXPECT_EQ(output_shape({"resnet34", 3, 10, 32}, 1), (Shape{1, 10}));
  EXPECT_EQ(output_shape({"resnet50", 3, 10, 32}, 1), (Shape{1, 10}));
  auto model = make_model({"resnet18", 3, 10, 32});
  EXPECT_EQ(entry(*model, "conv1.weight").sizes().vec(), (Shape{64, 3, 3, 3}));
}

TEST(ResNet, StandardStemFrom64Pixels) {
  EXPECT_EQ(output_shape({"resnet18", 3, 1000, 224}, 1), (Shape{1, 1000}));
  EXPECT_EQ(output_shape({"resnet50", 3, 10, 64}, 1), (Shape{1, 10}));
  auto model = make_model({"resnet18", 3, 10, 224});
  EXPECT_EQ(entry(*model, "conv1.weight").sizes().vec(), (Shape{64, 3, 7, 7}));
}

TEST(ResNet, TakesOneChannelImages) {
  EXPECT_EQ(output_shape({"resnet18", 1, 10, 28}, 2), (Shape{2, 10}));
  auto model = make_model({"resnet18", 1, 10, 28});
  EXPECT_EQ(entry(*model, "conv1.weight").sizes().vec(), (Shape{64, 1, 3, 3}));
}

// The figures torchvision 0.14 gives for resnetNN() with 1000 classes.
TEST(ResNet, ParameterCountsMatchTorchvision) {
  auto resnet18 = make_model({"resnet18", 3, 1000, 224});
  EXPECT_EQ(parameter_count(*resnet18), 11689512);
  EXPECT_EQ(resnet18->state().size(), 122u);
  auto resnet34 = make_model({"resnet34", 3, 1000, 224});
  EXPECT_EQ(parameter_count(*resnet34), 21797672);
  EXPECT_EQ(resnet34->state().size(), 218u);
  auto resnet50 = make_model({"resnet50", 3, 1000, 224});
  EXPECT_EQ(parameter_count(*resnet50), 25557032);
  EXPECT_EQ(resnet50->state().size(), 320u);
}

TEST(ResNet, HasTorchvisionNamesInStateDictOrder) {
  auto model = make_model({"resnet18", 3, 10, 224});
  const auto list = names(*model);
  ASSERT_GE(list.size(), 8u);
  EXPECT_EQ(std::vector<std::string>(list.begin(), list.begin() + 8),
            (std::vector<std::string>{"conv1.weight", "bn1.weight", "bn1.bias", "bn1.running_mean",
                                      "bn1.running_var", "bn1.num_batches_tracked",
                                      "layer1.0.conv1.weight", "layer1.0.bn1.weight"}));
  EXPECT_THAT(list, ::testing::Contains("layer2.0.downsample.0.weight"));
  EXPECT_THAT(list, ::testing::Contains("layer2.0.downsample.1.running_var"));
  EXPECT_THAT(list, ::testing::Not(::testing::Contains("layer1.0.downsample.0.weight")));
  EXPECT_EQ(list.back(), "fc.bias");

  auto resnet50 = make_model({"resnet50", 3, 10, 224});
  const auto list50 = names(*resnet50);
  EXPECT_THAT(list50, ::testing::Contains("layer1.0.downsample.0.weight"));  // 64 -> 256 channels
  EXPECT_THAT(list50, ::testing::Contains("layer4.2.bn3.weight"));
}

TEST(ResNet, ConvolutionsUseHeInitialisation) {
  auto model = make_model({"resnet50", 3, 10, 224});
  // kaiming_normal_(fan_out, relu): std = sqrt(2 / (out_channels * k * k)).
  const auto weight = entry(*model, "layer3.0.conv2.weight");  // 256 x 256 x 3 x 3
  const double expected = std::sqrt(2.0 / (256.0 * 9.0));
  EXPECT_NEAR(weight.std().item<double>(), expected, expected * 0.05);
  EXPECT_EQ(entry(*model, "bn1.weight").min().item<float>(), 1.0f);
}

TEST(Model, LoadStateCopiesEveryTensor) {
  auto source = make_model({"resnet18", 3, 10, 32});
  auto target = make_model({"resnet18", 3, 10, 32});
  source->set_training(false);
  target->set_training(false);
  at::NoGradGuard no_grad;
  const auto input = at::randn({2, 3, 32, 32});
  ASSERT_FALSE(at::equal(source->forward(input), target->forward(input)));
  target->load_state(source->state());
  EXPECT_TRUE(at::equal(source->forward(input), target->forward(input)));
}

TEST(Model, LoadStateNamesAMissingEntry) {
  auto model = make_model({"cnn", 1, 10, 28});
  auto state = model->state();
  state.erase(state.begin() + 2);  // conv2.weight
  try {
    model->load_state(state);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& error) {
    EXPECT_STREQ(error.what(), "model 'cnn': the state has no entry 'conv2.weight'");
  }
}

TEST(Model, LoadStateNamesAMisshapedEntry) {
  auto model = make_model({"cnn", 1, 10, 28});
  auto other = make_model({"cnn", 1, 10, 32});
  try {
    model->load_state(other->state());
    FAIL() << "expected an error";
  } catch (const std::runtime_error& error) {
    EXPECT_STREQ(error.what(),
                 "model 'cnn': entry 'fc.weight' has shape [10, 4096]; expected [10, 3136]");
  }
}

TEST(Model, LoadStateRefusesUnknownEntries) {
  auto model = make_model({"cnn", 1, 10, 28});
  auto state = model->state();
  state.emplace_back("head.weight", at::zeros({1}));
  EXPECT_THROW(model->load_state(state), std::runtime_error);
}

TEST(MakeModel, UnknownNameSaysWhatIsExpected) {
  try {
    make_model({"resnet19", 3, 10, 32});
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& error) {
    EXPECT_STREQ(error.what(),
                 "model 'resnet19': expected cnn, resnet18, resnet34, resnet50 or a TorchScript "
                 "file (.pt)");
  }
}

TEST(MakeModel, RefusesImpossibleSizes) {
  EXPECT_THROW(make_model({"cnn", 0, 10, 28}), std::invalid_argument);
  EXPECT_THROW(make_model({"resnet18", 3, 0, 32}), std::invalid_argument);
  EXPECT_THROW(make_model({"cnn", 1, 10, 3}), std::invalid_argument);
}

TEST(MakeModel, ModelsMoveBetweenTrainingAndEvaluation) {
  auto model = make_model({"resnet18", 3, 10, 32});
  const auto input = at::randn({4, 3, 32, 32});
  model->set_training(true);
  model->forward(input);
  EXPECT_EQ(entry(*model, "bn1.num_batches_tracked").item<int64_t>(), 1);
  model->set_training(false);
  model->forward(input);
  EXPECT_EQ(entry(*model, "bn1.num_batches_tracked").item<int64_t>(), 1);
  model->to(c10::Device(c10::kCPU));
}

}  // namespace
}  // namespace dl::test
