// The small CNN and its builder.
#include "model/cnn.h"

#include "model/builders.h"
#include "model/module_model.h"

namespace dl::model {

CnnImpl::CnnImpl(const CnnOptions& options) {
  namespace nn = torch::nn;
  conv1_ = register_module("conv1",
                           nn::Conv2d(nn::Conv2dOptions(options.in_channels, 32, 3).padding(1)));
  conv2_ = register_module("conv2", nn::Conv2d(nn::Conv2dOptions(32, 64, 3).padding(1)));
  // Each 2x2 pool floors the side, as Python does: floor(floor(s / 2) / 2) == s / 4.
  const int64_t side = options.input_size / 4;
  fc_ = register_module("fc", nn::Linear(64 * side * side, options.num_classes));
}

torch::Tensor CnnImpl::forward(const torch::Tensor& input) {
  auto x = torch::max_pool2d(torch::relu(conv1_->forward(input)), 2);
  x = torch::max_pool2d(torch::relu(conv2_->forward(x)), 2);
  return fc_->forward(x.flatten(1));
}

std::unique_ptr<Model> make_cnn(const ModelSpec& spec) {
  Cnn net(CnnOptions{spec.in_channels, spec.num_classes, spec.input_size});
  return wrap_module("cnn", net.ptr(),
                     [net](const at::Tensor& input) mutable { return net->forward(input); });
}

}  // namespace dl::model
