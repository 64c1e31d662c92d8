// --freeze's choice of modules (freeze.h); Model::freeze does the freezing.
#include "model/freeze.h"

#include "core/text.h"
#include "model/init_from.h"

#include <algorithm>
#include <stdexcept>

namespace dl::model {
namespace {

std::string owner(const std::string& tensor_name) {
  const auto dot = tensor_name.rfind('.');
  return dot == std::string::npos ? std::string() : tensor_name.substr(0, dot);
}

}  // namespace

bool in_modules(const std::string& module, const std::vector<std::string>& modules) {
  return std::any_of(modules.begin(), modules.end(), [&](const std::string& m) {
    return module == m || (module.size() > m.size() && module.compare(0, m.size(), m) == 0 &&
                           module[m.size()] == '.');
  });
}

std::vector<std::string> modules_to_freeze(Model& model, const std::string& setting) {
  if (setting == "none" || setting.empty()) return {};
  if (setting == "backbone") {
    const std::string classifier = classifier_module(model);
    std::vector<std::string> modules;
    for (const auto& [name, tensor] : model.state()) {
      const std::string module = owner(name);
      if (module.empty() || in_modules(module, {classifier})) continue;
      if (std::find(modules.begin(), modules.end(), module) == modules.end()) {
        modules.push_back(module);
      }
    }
    return modules;
  }
  const auto stages = parse_u64(setting);
  if (!stages || *stages > 4) {
    throw std::invalid_argument(
        "--freeze: expected none, backbone or a number of ResNet stages "
        "0 to 4, got '" +
        setting + "'");
  }
  if (model.name().rfind("resnet", 0) != 0) {
    throw std::invalid_argument("--freeze " + setting + ": model " + model.name() +
                                " has no ResNet stages; expected none or backbone");
  }
  std::vector<std::string> modules = {"conv1", "bn1"};
  for (unsigned i = 1; i <= *stages; ++i) modules.push_back("layer" + std::to_string(i));
  return modules;
}

}  // namespace dl::model
