// Reading the weights of another run or another program for --init-from: a torch.save zip file
// holding a state dict (torchvision's published weights, `torch.save(model.state_dict(), f)`),
// a dict holding one under "model_state_dict" (this project's checkpoints), "state_dict" or
// "model". The pickle is read by state_pickle.h's interpreter, never by LibTorch's unpickler
// (which reads Python's OrderedDict as None in 1.13) and never by Python's (which would run any
// global the file names).
#pragma once

#include "model/model.h"

#include <string>
#include <vector>

namespace dl::model {

struct WeightsFile {
  NamedTensors tensors;     // in the file's order, on the CPU, in the file's dtypes
  std::string found_under;  // "" for a bare state dict, else the key that held it
};

// Throws UserError: 66 when `path` does not exist, 65 naming the file and what it is instead
// when it is not a torch.save zip file holding a state dict (a legacy torch.save file, a text
// file, a TorchScript module, a truncated archive, a pickle naming a global it has no use for).
WeightsFile read_weights_file(const std::string& path);

// The same from the file's bytes; `path` names it in messages.
WeightsFile parse_weights_file(const std::vector<char>& bytes, const std::string& path);

}  // namespace dl::model
