// Loading a model_state_dict into a model's own tensors with the rules of Python's
// load_state_dict(strict=True): every name present, no unknown names, the same shapes.
#pragma once

#include "model/model.h"

#include <string>

namespace dl::model {

// `target` is the model's live state (Model::state()); `source` is copied into it, converting
// device and dtype. Throws std::runtime_error naming `model_name` and the offending entry.
void copy_state(const std::string& model_name, const NamedTensors& target,
                const NamedTensors& source);

}  // namespace dl::model
