// Which modules --freeze keeps fixed while the rest of the model trains (fine-tuning):
//   none      nothing
//   backbone  every module but the classifier (init_from.h's classifier_module: "fc")
//   N         a ResNet's stem (conv1, bn1) and its first N of 4 stages (layer1 .. layerN), 0 to 4
#pragma once

#include "model/model.h"

#include <string>
#include <vector>

namespace dl::model {

// True when `module` ("layer1.0.bn1") is one of `modules` or inside one of them.
bool in_modules(const std::string& module, const std::vector<std::string>& modules);

// The modules that `setting` freezes in `model`. Throws std::invalid_argument naming the setting
// when it does not apply (a stage count for a model without ResNet stages).
std::vector<std::string> modules_to_freeze(Model& model, const std::string& setting);

}  // namespace dl::model
