// copy_state: strict, Python-compatible loading of named tensors into a model.
#include "model/state_copy.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <sstream>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

namespace dl::model {
namespace {

std::string shape_text(const at::Tensor& tensor) {
  std::ostringstream out;
  out << tensor.sizes();
  return out.str();
}

}  // namespace

void copy_state(const std::string& model_name, const NamedTensors& target,
                const NamedTensors& source) {
  const std::string prefix = "model '" + model_name + "': ";
  std::unordered_map<std::string, const at::Tensor*> by_name;
  for (const auto& [name, tensor] : source) by_name.emplace(name, &tensor);

  // Check everything before copying anything, so that a bad state leaves the model untouched.
  for (const auto& [name, tensor] : target) {
    const auto found = by_name.find(name);
    if (found == by_name.end()) {
      throw std::runtime_error(prefix + "the state has no entry '" + name + "'");
    }
    if (!found->second->defined() || found->second->sizes() != tensor.sizes()) {
      throw std::runtime_error(prefix + "entry '" + name + "' has shape " +
                               (found->second->defined() ? shape_text(*found->second) : "[none]") +
                               "; expected " + shape_text(tensor));
    }
  }
  if (source.size() != target.size()) {
    std::unordered_set<std::string> wanted;
    for (const auto& entry : target) wanted.insert(entry.first);
    for (const auto& entry : source) {
      if (wanted.count(entry.first) == 0) {
        throw std::runtime_error(prefix + "unexpected entry '" + entry.first +
                                 "' in the state (another architecture?)");
      }
    }
    throw std::runtime_error(prefix + "the state names some entries twice");
  }

  // Parameters are leaves that require grad: copying into them must not be recorded.
  at::NoGradGuard no_grad;
  for (const auto& [name, tensor] : target) tensor.copy_(*by_name.at(name));
}

}  // namespace dl::model
