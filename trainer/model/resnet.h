// torchvision's ResNet-18/34/50 with its parameter names (conv1, bn1, layer1.0.conv1, ...,
// layer2.0.downsample.0, fc), so a state saved here loads into torchvision.models.resnetNN with
// strict=True. Inputs below 64 pixels get the CIFAR stem instead: a 3x3 stride-1 conv1 and no
// max-pool, which keeps a 32x32 image from shrinking to 1x1 before layer4.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <cstdint>

namespace dl::model {

struct ResNetOptions {
  int depth = 18;  // 18, 34 or 50
  int64_t in_channels = 3;
  int64_t num_classes = 1000;
  bool small_input = false;  // the CIFAR stem, for inputs below 64x64
};

class ResNetImpl : public torch::nn::Module {
 public:
  // Throws std::invalid_argument for a depth other than 18, 34 or 50.
  explicit ResNetImpl(const ResNetOptions& options);
  torch::Tensor forward(const torch::Tensor& input);

 private:
  bool small_input_;
  torch::nn::Conv2d conv1_{nullptr};
  torch::nn::BatchNorm2d bn1_{nullptr};
  torch::nn::Sequential layer1_{nullptr};
  torch::nn::Sequential layer2_{nullptr};
  torch::nn::Sequential layer3_{nullptr};
  torch::nn::Sequential layer4_{nullptr};
  torch::nn::Linear fc_{nullptr};
};
TORCH_MODULE(ResNet);

}  // namespace dl::model
