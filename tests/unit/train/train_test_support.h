// Helpers shared by dl::train's unit tests: the small CNN with fixed weights, a fixed batch, the
// largest difference between parameter lists, and a model wrapper that runs out of memory
// (simulated) above a batch size.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "model/model.h"

namespace dl::test {

// The tutorial's CNN (1x28x28 in, 10 classes) with weights drawn from `seed`: two calls with the
// same seed give equal models.
std::unique_ptr<model::Model> make_cnn(std::uint64_t seed = 7);

// n images [n, 1, 28, 28] (normalised-looking floats) and labels [n] drawn from `seed`.
std::pair<at::Tensor, at::Tensor> make_batch(std::int64_t n, std::uint64_t seed = 11);

// max |a[i] - b[i]| over all elements of all tensors.
double max_abs_diff(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b);

// Copies (detached clones) of the tensors.
std::vector<at::Tensor> clones(const std::vector<at::Tensor>& tensors);

// Delegates to `inner`, but a forward on more than `limit` samples throws c10::OutOfMemoryError
// (limit 0: every forward does). Counts the forwards that threw.
class OomAboveModel : public model::Model {
 public:
  OomAboveModel(std::unique_ptr<model::Model> inner, std::int64_t limit)
      : inner_(std::move(inner)), limit_(limit) {}
  at::Tensor forward(const at::Tensor& input) override;
  std::vector<at::Tensor> parameters() override { return inner_->parameters(); }
  model::NamedTensors state() override { return inner_->state(); }
  void load_state(const model::NamedTensors& state) override { inner_->load_state(state); }
  void set_training(bool training) override { inner_->set_training(training); }
  void freeze(const std::vector<std::string>& modules) override { inner_->freeze(modules); }
  void to(c10::Device device) override { inner_->to(device); }
  std::string name() const override { return inner_->name(); }
  int thrown() const { return thrown_; }

 private:
  std::unique_ptr<model::Model> inner_;
  std::int64_t limit_;
  int thrown_ = 0;
};

}  // namespace dl::test
