// make_model: picks the model family by name and checks the sizes that every built-in model needs.
#include "model/model.h"

#include "core/text.h"
#include "model/builders.h"

#include <stdexcept>
#include <string>

namespace dl::model {
namespace {

void require_at_least(const ModelSpec& spec, const char* field, int value, int minimum) {
  if (value < minimum) {
    throw std::invalid_argument("model '" + spec.name + "': " + field + " must be at least " +
                                std::to_string(minimum) + ", got " + std::to_string(value));
  }
}

}  // namespace

std::unique_ptr<Model> make_model(const ModelSpec& spec) {
  // A TorchScript file carries its own architecture: the sizes in the spec do not apply.
  if (ends_with(spec.name, ".pt")) return load_torchscript(spec.name);

  const bool known = spec.name == "cnn" || spec.name == "resnet18" || spec.name == "resnet34" ||
                     spec.name == "resnet50";
  if (!known) {
    throw std::invalid_argument(
        "model '" + spec.name +
        "': expected cnn, resnet18, resnet34, resnet50 or a TorchScript file (.pt)");
  }
  require_at_least(spec, "in_channels", spec.in_channels, 1);
  require_at_least(spec, "num_classes", spec.num_classes, 1);
  // The CNN pools twice by 2: below 4 pixels nothing would reach the linear layer.
  require_at_least(spec, "input_size", spec.input_size, spec.name == "cnn" ? 4 : 1);

  if (spec.name == "cnn") return make_cnn(spec);
  if (spec.name == "resnet18") return make_resnet(spec, 18);
  if (spec.name == "resnet34") return make_resnet(spec, 34);
  return make_resnet(spec, 50);
}

}  // namespace dl::model
