// Which device a run trains on, from the `device` setting: the same rules and messages for the
// training run and the memory probe, so a probe fails exactly where training would.
#pragma once

#include <c10/core/Device.h>

#include <string>

namespace dl::train {

// "auto", "cpu", "cuda" or "cuda:N"; "auto" and "cuda" mean cuda:`index`, which is a
// distributed rank's LOCAL_RANK (one GPU per local rank, as under torchrun). Throws UserError (69)
// for a CUDA device LibTorch cannot see.
c10::Device choose_device(const std::string& asked, int index = 0);

}  // namespace dl::train
