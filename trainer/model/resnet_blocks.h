// The two residual blocks of torchvision's ResNet: BasicBlock (ResNet-18/34) and Bottleneck
// (ResNet-50, the "v1.5" variant that strides in the 3x3 conv). Member names follow torchvision.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/pimpl.h>

#include <cstdint>

namespace dl::model {

// Two 3x3 convs; `downsample` (may be empty) matches the shortcut to the output's shape.
class BasicBlockImpl : public torch::nn::Module {
 public:
  static constexpr int64_t kExpansion = 1;
  BasicBlockImpl(int64_t inplanes, int64_t planes, int64_t stride,
                 torch::nn::Sequential downsample);
  torch::Tensor forward(const torch::Tensor& input);

 private:
  torch::nn::Conv2d conv1_{nullptr};
  torch::nn::BatchNorm2d bn1_{nullptr};
  torch::nn::Conv2d conv2_{nullptr};
  torch::nn::BatchNorm2d bn2_{nullptr};
  torch::nn::Sequential downsample_{nullptr};
};
TORCH_MODULE(BasicBlock);

// 1x1 reduce, 3x3 (strided), 1x1 expand by 4.
class BottleneckImpl : public torch::nn::Module {
 public:
  static constexpr int64_t kExpansion = 4;
  BottleneckImpl(int64_t inplanes, int64_t planes, int64_t stride,
                 torch::nn::Sequential downsample);
  torch::Tensor forward(const torch::Tensor& input);

 private:
  torch::nn::Conv2d conv1_{nullptr};
  torch::nn::BatchNorm2d bn1_{nullptr};
  torch::nn::Conv2d conv2_{nullptr};
  torch::nn::BatchNorm2d bn2_{nullptr};
  torch::nn::Conv2d conv3_{nullptr};
  torch::nn::BatchNorm2d bn3_{nullptr};
  torch::nn::Sequential downsample_{nullptr};
};
TORCH_MODULE(Bottleneck);

// torchvision's conv3x3 / conv1x1 helpers: no bias, since a BatchNorm follows.
torch::nn::Conv2d conv3x3(int64_t in_planes, int64_t out_planes, int64_t stride = 1);
torch::nn::Conv2d conv1x1(int64_t in_planes, int64_t out_planes, int64_t stride = 1);

}  // namespace dl::model
