// A Model over a C++ torch::nn::Module tree. Names come from the tree, in the order Python's
// state_dict() lists them, so a state saved here loads into the same architecture in Python.
#pragma once

#include "model/model.h"

#include <functional>
#include <memory>
#include <string>

namespace torch::nn {
class Module;
}  // namespace torch::nn

namespace dl::model {

// nn::Module has no virtual forward: each architecture passes its own.
using ForwardFn = std::function<at::Tensor(const at::Tensor&)>;

std::unique_ptr<Model> wrap_module(std::string name, std::shared_ptr<torch::nn::Module> module,
                                   ForwardFn forward);

}  // namespace dl::model
