// `dl-train evaluate`: a checkpoint over a data set's test split (or its validation part, or all
// of it) with validation's loader, transforms, precision and device; top-1, top-5 and per-class
// accuracy printed, and confusion.csv, per_class.csv and summary.json written.
#pragma once

#include "train/modes/eval_config.h"

namespace dl::train {

// Returns the exit code; throws UserError for bad input (nothing is written then).
int run_evaluate(const EvalConfig& config);

}  // namespace dl::train
