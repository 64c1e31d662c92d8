// export_adamw / import_adamw. LibTorch keys an optimizer's per-parameter state by the
// parameter's TensorImpl address: printed as a string up to 2.1 (see torch/optim/adamw.h and
// serialize.h), the pointer itself (void*) from 2.2 on. An undocumented key, fenced in
// libtorch_private.h (point 1), which says why LibTorch's own serialisation is not used instead.
#include "model/adamw_state.h"

#include "model/libtorch_private.h"

#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>

namespace dl::model {
namespace {

// The key type of Optimizer::state() in this LibTorch; the overload for it makes the key, so each
// LibTorch line compiles the spelling it has (no version number to get wrong). The other overload
// is unused there.
using StateKey = std::decay_t<decltype(std::declval<torch::optim::Optimizer&>().state())>::key_type;
[[maybe_unused]] std::string make_state_key(const c10::TensorImpl* impl,
                                            const std::string* /*tag*/) {
  std::ostringstream text;  // as c10::guts::to_string, which 1.13 uses
  text << impl;
  return text.str();
}
[[maybe_unused]] void* make_state_key(const c10::TensorImpl* impl, void* const* /*tag*/) {
  return const_cast<c10::TensorImpl*>(impl);
}

StateKey state_key(const at::Tensor& param) {
  return make_state_key(param.unsafeGetTensorImpl(), static_cast<const StateKey*>(nullptr));
}

at::Tensor copy_to_cpu(const at::Tensor& tensor) {
  return tensor.detach().to(at::kCPU, /*non_blocking=*/false, /*copy=*/true);
}

// Where the parameter lives, as a fresh tensor: the optimizer updates its state in place.
at::Tensor copy_like(const at::Tensor& tensor, const at::Tensor& param) {
  return tensor.to(param.device(), param.scalar_type(), /*non_blocking=*/false, /*copy=*/true);
}

std::unordered_map<const c10::TensorImpl*, int64_t> index_by_impl(
    const std::vector<at::Tensor>& params) {
  std::unordered_map<const c10::TensorImpl*, int64_t> index;
  for (size_t i = 0; i < params.size(); ++i) {
    index.emplace(params[i].unsafeGetTensorImpl(), static_cast<int64_t>(i));
  }
  return index;
}

std::string shape_text(const at::Tensor& tensor) {
  std::string text = "[";
  for (size_t i = 0; i < tensor.sizes().size(); ++i) {
    text += (i == 0 ? "" : ", ") + std::to_string(tensor.sizes()[i]);
  }
  return text + "]";
}

}  // namespace

OptimizerState export_adamw(const torch::optim::AdamW& optimizer,
                            const std::vector<at::Tensor>& params) {
  const auto index = index_by_impl(params);
  OptimizerState result;
  for (const auto& group : optimizer.param_groups()) {
    const auto& options = static_cast<const torch::optim::AdamWOptions&>(group.options());
    ParamGroup saved;
    saved.lr = options.lr();
    saved.beta1 = std::get<0>(options.betas());
    saved.beta2 = std::get<1>(options.betas());
    saved.eps = options.eps();
    saved.weight_decay = options.weight_decay();
    saved.amsgrad = options.amsgrad();
    for (const auto& param : group.params()) {
      const auto found = index.find(param.unsafeGetTensorImpl());
      if (found == index.end()) {
        throw std::invalid_argument(
            "export_adamw: the optimizer holds a tensor that is not one of the model's parameters");
      }
      saved.params.push_back(found->second);

      const auto state = optimizer.state().find(state_key(param));
      if (state == optimizer.state().end()) continue;  // not stepped yet
      const auto& adamw = static_cast<const torch::optim::AdamWParamState&>(*state->second);
      ParamState slot;
      slot.step = adamw.step();
      slot.exp_avg = copy_to_cpu(adamw.exp_avg());
      slot.exp_avg_sq = copy_to_cpu(adamw.exp_avg_sq());
      if (adamw.max_exp_avg_sq().defined()) {
        slot.max_exp_avg_sq = copy_to_cpu(adamw.max_exp_avg_sq());
      }
      result.state.emplace(found->second, std::move(slot));
    }
    result.param_groups.push_back(std::move(saved));
  }
  // Every entry of state() belongs to a parameter of some group; one the keys above did not find
  // means this LibTorch keys its state otherwise, and a checkpoint without it would resume wrong.
  if (optimizer.state().size() != result.state.size()) {
    throw std::logic_error(
        "export_adamw: " + std::to_string(optimizer.state().size() - result.state.size()) +
        " of the optimizer's state entries are not keyed as model/libtorch_private.h says (" +
        libtorch_private::kCheckedVersions + "): this LibTorch keys them otherwise");
  }
  return result;
}

void import_adamw(torch::optim::AdamW& optimizer, const std::vector<at::Tensor>& params,
                  const OptimizerState& state) {
  const auto fail = [](const std::string& what) {
    throw std::runtime_error("optimizer state: " + what);
  };
  auto& groups = optimizer.param_groups();
  if (!state.param_groups.empty() && state.param_groups.size() != groups.size()) {
    fail(std::to_string(state.param_groups.size()) + " parameter groups saved; the optimizer has " +
         std::to_string(groups.size()));
  }
  const auto index = index_by_impl(params);
  for (size_t g = 0; g < state.param_groups.size(); ++g) {
    const ParamGroup& saved = state.param_groups[g];
    std::vector<int64_t> live;
    for (const auto& param : groups[g].params()) {
      const auto found = index.find(param.unsafeGetTensorImpl());
      live.push_back(found == index.end() ? -1 : found->second);
    }
    if (live != saved.params) {
      fail("parameter group " + std::to_string(g) +
           " holds other parameters than the saved one (another model or grouping?)");
    }
  }
  for (const auto& [i, slot] : state.state) {
    if (i < 0 || i >= static_cast<int64_t>(params.size())) {
      fail("state for parameter " + std::to_string(i) + ", but the model has " +
           std::to_string(params.size()) + " parameters");
    }
    const auto& param = params[static_cast<size_t>(i)];
    if (!slot.exp_avg.defined() || !slot.exp_avg_sq.defined() ||
        slot.exp_avg.sizes() != param.sizes() || slot.exp_avg_sq.sizes() != param.sizes()) {
      fail("state of parameter " + std::to_string(i) + " does not match its shape " +
           shape_text(param));
    }
  }

  // Everything fits: now change the optimizer.
  for (size_t g = 0; g < state.param_groups.size(); ++g) {
    const ParamGroup& saved = state.param_groups[g];
    auto& options = static_cast<torch::optim::AdamWOptions&>(groups[g].options());
    options.lr(saved.lr);
    options.betas(std::make_tuple(saved.beta1, saved.beta2));
    options.eps(saved.eps);
    options.weight_decay(saved.weight_decay);
    options.amsgrad(saved.amsgrad);
  }
  for (const auto& param : params) optimizer.state().erase(state_key(param));
  for (const auto& [i, slot] : state.state) {
    const auto& param = params[static_cast<size_t>(i)];
    auto adamw = std::make_unique<torch::optim::AdamWParamState>();
    adamw->step(slot.step);
    adamw->exp_avg(copy_like(slot.exp_avg, param));
    adamw->exp_avg_sq(copy_like(slot.exp_avg_sq, param));
    if (slot.max_exp_avg_sq.defined()) adamw->max_exp_avg_sq(copy_like(slot.max_exp_avg_sq, param));
    optimizer.state()[state_key(param)] = std::move(adamw);
  }
}

}  // namespace dl::model
