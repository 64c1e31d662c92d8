// The tutorial's small CNN: two conv blocks and one linear layer. The submodule names (conv1,
// conv2, fc) are those of the equivalent Python nn.Module, so its state loads there as is.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <cstdint>

namespace dl::model {

struct CnnOptions {
  int64_t in_channels = 1;
  int64_t num_classes = 10;
  int64_t input_size = 28;  // height = width
};

// conv(in,32,3,pad 1)-ReLU-maxpool 2 -> conv(32,64,3,pad 1)-ReLU-maxpool 2 -> flatten -> linear.
class CnnImpl : public torch::nn::Module {
 public:
  explicit CnnImpl(const CnnOptions& options);
  torch::Tensor forward(const torch::Tensor& input);

 private:
  torch::nn::Conv2d conv1_{nullptr};
  torch::nn::Conv2d conv2_{nullptr};
  torch::nn::Linear fc_{nullptr};
};
TORCH_MODULE(Cnn);

}  // namespace dl::model
