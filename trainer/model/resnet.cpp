// ResNet: torchvision's layer construction and initialisation, and its builder.
#include "model/resnet.h"

#include "model/builders.h"
#include "model/module_model.h"
#include "model/resnet_blocks.h"

#include <torch/nn/init.h>

#include <array>
#include <stdexcept>
#include <string>

namespace dl::model {
namespace {

// torchvision's _make_layer: the first block changes width and stride, so its shortcut needs a
// 1x1 conv + BN (named downsample.0 / downsample.1); the rest keep the shape.
template <typename Block>
torch::nn::Sequential make_layer(int64_t& inplanes, int64_t planes, int blocks, int64_t stride) {
  const int64_t outplanes = planes * Block::ContainedType::kExpansion;
  torch::nn::Sequential downsample{nullptr};
  if (stride != 1 || inplanes != outplanes) {
    downsample = torch::nn::Sequential(conv1x1(inplanes, outplanes, stride),
                                       torch::nn::BatchNorm2d(outplanes));
  }
  torch::nn::Sequential layer;
  layer->push_back(Block(inplanes, planes, stride, downsample));
  inplanes = outplanes;
  for (int i = 1; i < blocks; ++i) {
    layer->push_back(Block(inplanes, planes, 1, torch::nn::Sequential{nullptr}));
  }
  return layer;
}

std::array<int, 4> blocks_per_layer(int depth) {
  switch (depth) {
    case 18:
      return {2, 2, 2, 2};
    case 34:
    case 50:
      return {3, 4, 6, 3};
    default:
      throw std::invalid_argument("resnet: depth " + std::to_string(depth) +
                                  " is not built; expected 18, 34 or 50");
  }
}

}  // namespace

ResNetImpl::ResNetImpl(const ResNetOptions& options) : small_input_(options.small_input) {
  namespace nn = torch::nn;
  const auto blocks = blocks_per_layer(options.depth);
  conv1_ = register_module(
      "conv1",
      small_input_
          ? conv3x3(options.in_channels, 64)
          : nn::Conv2d(
                nn::Conv2dOptions(options.in_channels, 64, 7).stride(2).padding(3).bias(false)));
  bn1_ = register_module("bn1", nn::BatchNorm2d(64));

  int64_t inplanes = 64;
  const auto layer = [&](int64_t planes, int count, int64_t stride) {
    return options.depth == 50 ? make_layer<Bottleneck>(inplanes, planes, count, stride)
                               : make_layer<BasicBlock>(inplanes, planes, count, stride);
  };
  layer1_ = register_module("layer1", layer(64, blocks[0], 1));
  layer2_ = register_module("layer2", layer(128, blocks[1], 2));
  layer3_ = register_module("layer3", layer(256, blocks[2], 2));
  layer4_ = register_module("layer4", layer(512, blocks[3], 2));
  fc_ = register_module("fc", nn::Linear(inplanes, options.num_classes));

  // torchvision's initialisation: He-normal (fan_out) convs; BatchNorm already starts at 1 / 0
  // and the linear layer keeps PyTorch's default, as in torchvision.
  torch::NoGradGuard no_grad;
  for (auto& module : modules(/*include_self=*/false)) {
    if (auto* conv = module->as<nn::Conv2d>()) {
      nn::init::kaiming_normal_(conv->weight, /*a=*/0, torch::kFanOut, torch::kReLU);
    }
  }
}

torch::Tensor ResNetImpl::forward(const torch::Tensor& input) {
  auto x = torch::relu(bn1_->forward(conv1_->forward(input)));
  if (!small_input_) x = torch::max_pool2d(x, /*kernel_size=*/3, /*stride=*/2, /*padding=*/1);
  x = layer4_->forward(layer3_->forward(layer2_->forward(layer1_->forward(x))));
  x = torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
  return fc_->forward(x);
}

std::unique_ptr<Model> make_resnet(const ModelSpec& spec, int depth) {
  ResNet net(ResNetOptions{depth, spec.in_channels, spec.num_classes, spec.input_size < 64});
  return wrap_module("resnet" + std::to_string(depth), net.ptr(),
                     [net](const at::Tensor& input) mutable { return net->forward(input); });
}

}  // namespace dl::model
