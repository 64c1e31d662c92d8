// ModuleModel: adapts a torch::nn::Module to the trainer's Model interface.
#include "model/module_model.h"

#include "model/freeze.h"
#include "model/state_copy.h"

#include <torch/nn/module.h>

#include <utility>

namespace dl::model {
namespace {

std::string join(const std::string& prefix, const std::string& key) {
  return prefix.empty() ? key : prefix + "." + key;
}

class ModuleModel final : public Model {
 public:
  ModuleModel(std::string name, std::shared_ptr<torch::nn::Module> module, ForwardFn forward)
      : name_(std::move(name)), module_(std::move(module)), forward_(std::move(forward)) {}

  at::Tensor forward(const at::Tensor& input) override { return forward_(input); }

  std::vector<at::Tensor> parameters() override {
    std::vector<at::Tensor> trainable;
    for (const auto& [name, tensor] : named(/*with_buffers=*/false)) {
      if (tensor.requires_grad()) trainable.push_back(tensor);
    }
    return trainable;
  }

  NamedTensors state() override { return named(/*with_buffers=*/true); }

  void load_state(const NamedTensors& state) override { copy_state(name_, this->state(), state); }

  void set_training(bool training) override {
    module_->train(training);
    if (!training) return;
    for (const auto& item : module_->named_modules()) {
      if (in_modules(item.key(), frozen_)) item.value()->eval();
    }
  }

  void freeze(const std::vector<std::string>& modules) override {
    frozen_ = modules;
    for (const auto& item : module_->named_modules()) {
      if (!in_modules(item.key(), frozen_)) continue;
      for (auto& param : item.value()->named_parameters(/*recurse=*/false)) {
        if (param.value().defined()) param.value().set_requires_grad(false);
      }
    }
    set_training(module_->is_training());
  }

  void to(c10::Device device) override { module_->to(device); }

  std::string name() const override { return name_; }

 private:
  // Python's state_dict() walks the modules depth-first and lists each module's own parameters,
  // then its own buffers; LibTorch's recursive named_parameters() would put all buffers last.
  NamedTensors named(bool with_buffers) const {
    NamedTensors result;
    for (const auto& item : module_->named_modules()) {
      const std::string& prefix = item.key();
      // An optional parameter that is switched off (a conv without bias) is registered undefined.
      for (const auto& param : item.value()->named_parameters(/*recurse=*/false)) {
        if (param.value().defined()) result.emplace_back(join(prefix, param.key()), param.value());
      }
      if (!with_buffers) continue;
      for (const auto& buffer : item.value()->named_buffers(/*recurse=*/false)) {
        if (buffer.value().defined()) {
          result.emplace_back(join(prefix, buffer.key()), buffer.value());
        }
      }
    }
    return result;
  }

  std::string name_;
  std::shared_ptr<torch::nn::Module> module_;
  ForwardFn forward_;
  std::vector<std::string> frozen_;
};

}  // namespace

std::unique_ptr<Model> wrap_module(std::string name, std::shared_ptr<torch::nn::Module> module,
                                   ForwardFn forward) {
  return std::make_unique<ModuleModel>(std::move(name), std::move(module), std::move(forward));
}

}  // namespace dl::model
