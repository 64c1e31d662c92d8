// The training run: data, model, AdamW with a cosine schedule, gradient clipping, validation every
// epoch, best/last checkpoints, metrics, progress and monitoring. The tutorial's
// OptimizedTrainer, in C++.
#pragma once

#include "train/run/config.h"

namespace dl::train {

// Runs the whole training; returns the process exit code. Throws UserError for bad input.
int run_training(const TrainConfig& config);

}  // namespace dl::train
