// `dl-train predict`: a checkpoint's top-k classes, with softmax probabilities, for image files
// and the images below folders; one CSV row per file. Files that cannot be decoded get their row
// with the reason, the rest are predicted, and the exit code says so (79).
#pragma once

#include <string>
#include <vector>

#include "train/modes/eval_config.h"

namespace dl::train {

// The files `paths` name: files as given, folders searched recursively for image files
// (image_folder.h's extensions), each folder's in sorted order. Throws UserError 66 naming a path
// that does not exist, 65 when the folders hold no images at all.
std::vector<std::string> list_inputs(const std::vector<std::string>& paths);

// Returns 0 when every file was predicted, 79 when some could not be decoded; throws UserError
// for bad input (nothing is written then).
int run_predict(const EvalConfig& config);

}  // namespace dl::train
