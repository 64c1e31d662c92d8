// Moves AdamW's state between LibTorch's optimizer and the checkpoint's OptimizerState, where
// parameters are known by their index in the model's parameter list (as in Python's state_dict).
// Separate from checkpoint.h because it needs torch::optim.
#pragma once

#include "model/checkpoint.h"

#include <torch/optim/adamw.h>

#include <vector>

namespace dl::model {

// `params` is the model's parameter list (Model::parameters()), the order that indices refer to.
// Tensors are copied to the CPU. Throws std::invalid_argument if the optimizer holds a tensor
// that is not in `params`.
OptimizerState export_adamw(const torch::optim::AdamW& optimizer,
                            const std::vector<at::Tensor>& params);

// Restores hyper-parameters and per-parameter state (on each parameter's device and dtype) so the
// next step continues exactly where the exported optimizer stopped. Any state the optimizer held
// for `params` is replaced. Throws std::runtime_error when `state` does not fit (another model or
// another grouping of the parameters).
void import_adamw(torch::optim::AdamW& optimizer, const std::vector<at::Tensor>& params,
                  const OptimizerState& state);

}  // namespace dl::model
