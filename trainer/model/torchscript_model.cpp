// A model scripted in Python (torch.jit.script(model).save(path)) and loaded with
// torch::jit::load from the file's bytes, once zip_scan.h has found no zip bomb: forward,
// parameters, state and modes go through the scripted module, whose names are the Python
// module's, so its state loads back into that module in Python.
#include "core/files.h"
#include "core/text.h"
#include "model/builders.h"
#include "model/bytes_adapter.h"
#include "model/freeze.h"
#include "model/state_copy.h"
#include "model/zip_scan.h"

#include <c10/util/Exception.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/serialization/import.h>

#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

namespace dl::model {
namespace {

std::string join(const std::string& prefix, const std::string& key) {
  return prefix.empty() ? key : prefix + "." + key;
}

class ScriptModel final : public Model {
 public:
  ScriptModel(std::string path, torch::jit::Module module)
      : path_(std::move(path)), module_(std::move(module)) {}

  at::Tensor forward(const at::Tensor& input) override {
    auto output = module_.forward({input});
    if (!output.isTensor()) {
      throw std::runtime_error("model '" + path_ + "': forward returned a " + output.tagKind() +
                               "; expected a single tensor");
    }
    return output.toTensor();
  }

  std::vector<at::Tensor> parameters() override {
    std::vector<at::Tensor> trainable;
    for (const auto& param : module_.parameters()) {
      if (param.requires_grad()) trainable.push_back(param);
    }
    return trainable;
  }

  // In Python's state_dict() order: per module, depth first, parameters then buffers.
  NamedTensors state() override {
    NamedTensors result;
    for (const auto& module : module_.named_modules()) {
      for (const auto& param : module.value.named_parameters(/*recurse=*/false)) {
        result.emplace_back(join(module.name, param.name), param.value);
      }
      for (const auto& buffer : module.value.named_buffers(/*recurse=*/false)) {
        result.emplace_back(join(module.name, buffer.name), buffer.value);
      }
    }
    return result;
  }

  void load_state(const NamedTensors& state) override { copy_state(path_, this->state(), state); }

  void set_training(bool training) override {
    module_.train(training);
    if (!training) return;
    for (const auto& module : module_.named_modules()) {
      // A Module is a handle to its object: a copy trains the same submodule.
      torch::jit::Module handle = module.value;
      if (in_modules(module.name, frozen_)) handle.train(false);
    }
  }

  void freeze(const std::vector<std::string>& modules) override {
    frozen_ = modules;
    for (const auto& module : module_.named_modules()) {
      if (!in_modules(module.name, frozen_)) continue;
      for (const auto& param : module.value.named_parameters(/*recurse=*/false)) {
        param.value.set_requires_grad(false);
      }
    }
    set_training(module_.is_training());
  }

  void to(c10::Device device) override { module_.to(device); }

  std::string name() const override { return path_; }

 private:
  std::string path_;
  torch::jit::Module module_;
  std::vector<std::string> frozen_;
};

}  // namespace

std::unique_ptr<Model> load_torchscript(const std::string& path) {
  const std::string prefix = "model '" + path + "': ";
  // torch::jit::load's own message for a missing file is a multi-line assertion: read it here.
  std::vector<char> bytes;
  try {
    bytes = read_whole_file(path);
  } catch (const std::runtime_error& error) {
    throw std::invalid_argument(prefix + "cannot read the file (" + error.what() +
                                "); expected a TorchScript file saved with torch.jit.save");
  }
  const ZipScan zip = scan_zip_records(bytes);
  if (zip.verdict != ZipScan::Verdict::kSafe) {
    throw std::invalid_argument(prefix + "not a TorchScript archive (" + zip.why +
                                "); expected a file saved with torch.jit.script(model).save(path)");
  }
  torch::jit::Module module;
  try {
    module = torch::jit::load(std::make_shared<OwnedBytesAdapter>(std::move(bytes)));
  } catch (const c10::Error& error) {
    throw std::invalid_argument(prefix + "not a TorchScript archive (" +
                                first_line(error.what_without_backtrace()) +
                                "); expected a file saved with torch.jit.script(model).save(path)");
  } catch (const std::exception& error) {
    throw std::invalid_argument(prefix + "not a TorchScript archive (" + first_line(error.what()) +
                                "); expected a file saved with torch.jit.script(model).save(path)");
  }
  if (!module.find_method("forward")) {
    throw std::invalid_argument(prefix + "the TorchScript module has no forward method");
  }
  // The trainer treats every loaded model as trainable, whatever mode Python saved it in.
  module.train(true);
  return std::make_unique<ScriptModel>(path, std::move(module));
}

}  // namespace dl::model
