// The command lines of `dl-train evaluate` and `dl-train predict`: a checkpoint, what to run it
// on, and where the results go; the device, precision, batch size, workers and data settings are
// the training settings (dl.conf < DL_* environment < command line), so dl-launch's plan applies.
#pragma once

#include <string>
#include <vector>

#include "train/run/config.h"

namespace dl::train {

struct EvalConfig {
  std::string command;     // "evaluate" or "predict"
  std::string checkpoint;  // --checkpoint
  std::string split;       // evaluate: test | val | all; "" = test where the data has one, else all
  std::string out;         // evaluate: a directory; predict: a CSV file ("" = standard output)
  int top_k = 5;           // predict: classes per row
  std::vector<std::string> inputs;  // predict: image files and folders
  bool model_given = false;         // --model (or DL_MODEL, dl.conf) was set
  TrainConfig train;  // data, model, device, precision, batch size, workers, threads, ...
};

struct ParsedEval {
  bool help = false;
  EvalConfig config;
};

// argv[0] is the command ("evaluate" or "predict"). Throws UserError (64) naming the option.
ParsedEval parse_eval_args(int argc, const char* const argv[]);
std::string eval_usage(const std::string& command);

}  // namespace dl::train
