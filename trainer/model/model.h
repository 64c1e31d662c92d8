// A trainable model, whatever it was built from: a C++ module (small CNN, ResNet) or a TorchScript
// module scripted in Python. The trainer sees only this.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace dl::model {

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

class Model {
 public:
  virtual ~Model() = default;
  virtual at::Tensor forward(const at::Tensor& input) = 0;
  // Trainable parameters, in a fixed order (the optimizer's and the checkpoint's).
  virtual std::vector<at::Tensor> parameters() = 0;
  // Parameters and buffers by their PyTorch names ("conv1.weight", "bn1.running_mean"): the
  // model_state_dict of a checkpoint, loadable into the same architecture in Python.
  virtual NamedTensors state() = 0;
  // Copies `state` into the model; throws std::runtime_error naming a missing or mis-shaped entry.
  virtual void load_state(const NamedTensors& state) = 0;
  virtual void set_training(bool training) = 0;
  // Stops training the parameters of `modules` and of the modules inside them (freeze.h): they
  // no longer require grad, so parameters() and the optimizer leave them out, and those modules
  // evaluate in eval mode even while the model trains, so their BatchNorm statistics stay too.
  virtual void freeze(const std::vector<std::string>& modules) = 0;
  virtual void to(c10::Device device) = 0;
  virtual std::string name() const = 0;
};

struct ModelSpec {
  std::string name = "cnn";  // cnn, resnet18, resnet34, resnet50, or a TorchScript file (*.pt)
  int in_channels = 1;
  int num_classes = 10;
  int input_size = 28;  // height = width; ResNets use the small-input stem below 64
};

// Throws std::invalid_argument with a message naming the model when it cannot be built or loaded.
std::unique_ptr<Model> make_model(const ModelSpec& spec);

}  // namespace dl::model
