// Starting a model from weights trained elsewhere (--init-from): every tensor whose name and shape
// match is loaded; the classifier of another class count keeps its fresh initialisation; a first
// convolution for another number of input channels is adapted (timm's adapt_input_conv: summed
// over the file's channels for 1-channel data); anything else that differs is skipped. All of it
// is reported, so a user sees what was and was not transferred.
#pragma once

#include "model/model.h"

#include <string>
#include <vector>

namespace dl::model {

struct InitReport {
  std::size_t loaded = 0;  // model tensors set from the file (adapted ones included)
  std::size_t total = 0;   // the model's tensors (parameters and buffers)
  std::vector<std::string> reinitialised;  // the classifier's, "name [file shape] -> [model]"
  std::vector<std::string> adapted;        // "name [file shape] -> [model]"
  std::vector<std::string> skipped;        // same name, other shape: "name [file] vs [model]"
  std::vector<std::string> missing;        // model tensors the file lacks
  std::vector<std::string> unused;         // file tensors the model lacks
};

// The module holding the model's last parameter: its classifier ("fc" in the ResNets and the CNN).
std::string classifier_module(Model& model);

// Copies `weights` into `model` as described above. Throws UserError 76 (kMismatch) naming
// `path`, a few of the file's names and a few of the model's when nothing loads, or when more
// tensors differ in shape than match (another architecture); the model is then left untouched.
InitReport init_from(Model& model, const NamedTensors& weights, const std::string& path);

// The report as log lines: "loaded N of M model tensors from FILE", then re-initialised,
// adapted, skipped, missing and unused entries (a few names, then "and K more"), each line only
// when it has entries.
std::vector<std::string> describe(const InitReport& report, const std::string& path);

}  // namespace dl::model
