// BasicBlock and Bottleneck, registered in torchvision's order so the state lists the same way.
#include "model/resnet_blocks.h"

#include <utility>

namespace dl::model {

torch::nn::Conv2d conv3x3(int64_t in_planes, int64_t out_planes, int64_t stride) {
  return torch::nn::Conv2d(
      torch::nn::Conv2dOptions(in_planes, out_planes, 3).stride(stride).padding(1).bias(false));
}

torch::nn::Conv2d conv1x1(int64_t in_planes, int64_t out_planes, int64_t stride) {
  return torch::nn::Conv2d(
      torch::nn::Conv2dOptions(in_planes, out_planes, 1).stride(stride).bias(false));
}

BasicBlockImpl::BasicBlockImpl(int64_t inplanes, int64_t planes, int64_t stride,
                               torch::nn::Sequential downsample) {
  conv1_ = register_module("conv1", conv3x3(inplanes, planes, stride));
  bn1_ = register_module("bn1", torch::nn::BatchNorm2d(planes));
  conv2_ = register_module("conv2", conv3x3(planes, planes));
  bn2_ = register_module("bn2", torch::nn::BatchNorm2d(planes));
  if (!downsample.is_empty()) downsample_ = register_module("downsample", std::move(downsample));
}

torch::Tensor BasicBlockImpl::forward(const torch::Tensor& input) {
  auto out = torch::relu(bn1_->forward(conv1_->forward(input)));
  out = bn2_->forward(conv2_->forward(out));
  const auto identity = downsample_.is_empty() ? input : downsample_->forward(input);
  return torch::relu(out + identity);
}

BottleneckImpl::BottleneckImpl(int64_t inplanes, int64_t planes, int64_t stride,
                               torch::nn::Sequential downsample) {
  conv1_ = register_module("conv1", conv1x1(inplanes, planes));
  bn1_ = register_module("bn1", torch::nn::BatchNorm2d(planes));
  conv2_ = register_module("conv2", conv3x3(planes, planes, stride));
  bn2_ = register_module("bn2", torch::nn::BatchNorm2d(planes));
  conv3_ = register_module("conv3", conv1x1(planes, planes * kExpansion));
  bn3_ = register_module("bn3", torch::nn::BatchNorm2d(planes * kExpansion));
  if (!downsample.is_empty()) downsample_ = register_module("downsample", std::move(downsample));
}

torch::Tensor BottleneckImpl::forward(const torch::Tensor& input) {
  auto out = torch::relu(bn1_->forward(conv1_->forward(input)));
  out = torch::relu(bn2_->forward(conv2_->forward(out)));
  out = bn3_->forward(conv3_->forward(out));
  const auto identity = downsample_.is_empty() ? input : downsample_->forward(input);
  return torch::relu(out + identity);
}

}  // namespace dl::model
