// --init-from's matching of a file's tensors to a model's (init_from.h).
#include "model/init_from.h"

#include "core/errors.h"
#include "model/freeze.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <sstream>
#include <unordered_map>
#include <utility>

namespace dl::model {
namespace {

std::string shape(const at::Tensor& t) {
  std::ostringstream out;
  out << t.sizes();
  return out.str();
}

// timm's adapt_input_conv for a first convolution trained on 3 channels: for 1 channel the sum
// over the 3 (a grey image then gives the response the colour image of the same grey gave); for
// C channels the 3 repeated and cut to C, scaled by 3 / C. Undefined when it does not apply.
at::Tensor adapt_input_conv(const at::Tensor& file, const at::Tensor& model) {
  if (file.dim() != 4 || model.dim() != 4 || file.size(1) != 3 || model.size(1) == 3 ||
      file.size(0) != model.size(0) || file.size(2) != model.size(2) ||
      file.size(3) != model.size(3)) {
    return {};
  }
  const at::Tensor w = file.to(at::kFloat);
  const std::int64_t channels = model.size(1);
  if (channels == 1) return w.sum(1, /*keepdim=*/true);
  const std::int64_t repeat = (channels + 2) / 3;
  return w.repeat({1, repeat, 1, 1}).narrow(1, 0, channels) * (3.0 / static_cast<double>(channels));
}

// "a, b, c and K more": the first few of `names`.
std::string few(const std::vector<std::string>& names, std::size_t shown = 4) {
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < shown; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > shown) out += " and " + std::to_string(names.size() - shown) + " more";
  return out;
}

std::vector<std::string> names_of(const NamedTensors& tensors) {
  std::vector<std::string> names;
  for (const auto& entry : tensors) names.push_back(entry.first);
  return names;
}

// DataParallel and DistributedDataParallel save their model's names under "module.".
NamedTensors without_module_prefix(const NamedTensors& weights) {
  NamedTensors out;
  for (const auto& [name, tensor] : weights) {
    if (name.rfind("module.", 0) != 0) return weights;
    out.emplace_back(name.substr(7), tensor);
  }
  return out;
}

}  // namespace

std::string classifier_module(Model& model) {
  // The last parameter in state order (BatchNorm's buffers may come after it); parameters are
  // the state's tensors that require grad, the classifier's always (it is never frozen).
  std::string last;
  for (const auto& [name, tensor] : model.state()) {
    if (tensor.requires_grad()) last = name;
  }
  const auto dot = last.rfind('.');
  return dot == std::string::npos ? std::string() : last.substr(0, dot);
}

InitReport init_from(Model& model, const NamedTensors& file_weights, const std::string& path) {
  const NamedTensors target = model.state();
  std::unordered_map<std::string, const at::Tensor*> wanted;
  for (const auto& [name, tensor] : target) wanted.emplace(name, &tensor);
  NamedTensors weights = file_weights;
  bool any_name = false;
  for (const auto& entry : weights) any_name = any_name || wanted.count(entry.first) != 0;
  if (!any_name) weights = without_module_prefix(weights);

  const std::string classifier = classifier_module(model);
  const std::string first_conv = target.empty() ? std::string() : target.front().first;
  InitReport report;
  report.total = target.size();
  std::vector<std::pair<const at::Tensor*, at::Tensor>> copies;  // model tensor <- value
  std::unordered_map<std::string, const at::Tensor*> in_file;
  for (const auto& [name, tensor] : weights) {
    in_file.emplace(name, &tensor);
    const auto found = wanted.find(name);
    if (found == wanted.end()) {
      report.unused.push_back(name);
      continue;
    }
    const at::Tensor& mine = *found->second;
    const std::string change = name + " " + shape(tensor) + " -> " + shape(mine);
    if (tensor.sizes() == mine.sizes()) {
      copies.emplace_back(found->second, tensor);
    } else if (const std::string module = name.substr(0, name.rfind('.'));
               !classifier.empty() && in_modules(module, {classifier})) {
      report.reinitialised.push_back(change);
    } else if (at::Tensor adapted =
                   name == first_conv ? adapt_input_conv(tensor, mine) : at::Tensor();
               adapted.defined()) {
      copies.emplace_back(found->second, adapted);
      report.adapted.push_back(change);
    } else {
      report.skipped.push_back(name + " " + shape(tensor) + " in the file vs " + shape(mine));
    }
  }
  for (const auto& [name, tensor] : target) {
    (void)tensor;
    if (in_file.count(name) == 0) report.missing.push_back(name);
  }
  report.loaded = copies.size();

  // The classifier alone (a bias of the same class count) says nothing about the architecture.
  std::size_t outside_classifier = 0;
  for (const auto& [name, tensor] : target) {
    const bool copied = std::any_of(copies.begin(), copies.end(),
                                    [&](const auto& c) { return c.first->is_same(tensor); });
    if (copied &&
        (classifier.empty() || !in_modules(name.substr(0, name.rfind('.')), {classifier}))) {
      ++outside_classifier;
    }
  }
  if (outside_classifier == 0 || report.skipped.size() > report.loaded) {
    const std::string why =
        outside_classifier == 0
            ? "none of its " + std::to_string(weights.size()) +
                  " tensors fits the model outside its classifier (" + classifier + ")"
            : std::to_string(report.skipped.size()) + " of its tensors differ in shape from the " +
                  "model's and only " + std::to_string(report.loaded) + " fit (" +
                  few(report.skipped, 2) + ")";
    throw UserError(exit_code::kMismatch,
                    "--init-from " + path + ": " + why + "; weights for another architecture? " +
                        "The file has " + few(names_of(weights), 3) + "; model " + model.name() +
                        " has " + few(names_of(target), 3));
  }
  at::NoGradGuard no_grad;
  for (const auto& [mine, value] : copies) mine->copy_(value);
  return report;
}

std::vector<std::string> describe(const InitReport& r, const std::string& path) {
  std::vector<std::string> lines = {"init-from: loaded " + std::to_string(r.loaded) + " of " +
                                    std::to_string(r.total) + " model tensors from " + path};
  const auto add = [&lines](const char* what, const std::vector<std::string>& names) {
    if (!names.empty()) lines.push_back(std::string("init-from: ") + what + ": " + few(names));
  };
  add("re-initialised (the classifier, for another class count)", r.reinitialised);
  add("adapted to the input channels (timm's adapt_input_conv)", r.adapted);
  add("skipped (shape differs)", r.skipped);
  add("kept fresh (not in the file)", r.missing);
  add("not in the model (ignored)", r.unused);
  return lines;
}

}  // namespace dl::model
