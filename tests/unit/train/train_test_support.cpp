// Shared helpers of dl::train's unit tests.
#include "unit/train/train_test_support.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <string>

namespace dl::test {

std::unique_ptr<model::Model> make_cnn(std::uint64_t seed) {
  torch::manual_seed(seed);
  model::ModelSpec spec;
  spec.name = "cnn";
  return model::make_model(spec);
}

std::pair<at::Tensor, at::Tensor> make_batch(std::int64_t n, std::uint64_t seed) {
  torch::manual_seed(seed);
  return {torch::randn({n, 1, 28, 28}), torch::randint(0, 10, {n}, torch::kLong)};
}

double max_abs_diff(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    worst =
        std::max(worst, (a[i].to(at::kDouble) - b[i].to(at::kDouble)).abs().max().item<double>());
  }
  return worst;
}

std::vector<at::Tensor> clones(const std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor> out;
  for (const auto& t : tensors) out.push_back(t.detach().clone());
  return out;
}

at::Tensor OomAboveModel::forward(const at::Tensor& input) {
  if (input.size(0) > limit_) {
    ++thrown_;
    throw c10::OutOfMemoryError(
        {__func__, __FILE__, static_cast<std::uint32_t>(__LINE__)},
        "CUDA out of memory (test: forward on " + std::to_string(input.size(0)) + " samples)");
  }
  return inner_->forward(input);
}

}  // namespace dl::test
