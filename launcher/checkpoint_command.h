// `dl-launch evaluate ...` and `dl-launch predict ...`: the launcher plans as for training
// (device, precision, workers, threads, batch size) and starts `dl-train evaluate|predict` in the
// workspace with the plan, in one process. The arguments are split here: the launcher's options
// (and the training settings, which reach dl-train as DL_* variables) stay with the launcher;
// --checkpoint, --split, --out, --top-k and the paths to predict go to dl-train.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace dl {

struct CheckpointCommand {
  std::string word;                        // "evaluate" or "predict"
  std::vector<std::string> launcher_args;  // argv[0] first, for parse_options
  std::vector<std::string> trainer_args;   // after `dl-train <word>`
};

// Whether `word` is one of dl-train's checkpoint subcommands, evaluate or predict.
inline bool is_checkpoint_word(const std::string& word) {
  return word == "evaluate" || word == "predict";
}

// nullopt unless argv[1] is evaluate or predict. `takes_value(name)` says whether the launcher's
// option --name (or -n) consumes the next argument.
std::optional<CheckpointCommand> split_checkpoint_command(
    int argc, const char* const argv[], bool (*takes_value)(const std::string& name));

// The paths among `c`'s dl-train arguments (--checkpoint, --out, the paths to predict) made
// absolute against `cwd`, the caller's working directory: dl-train runs in the workspace.
void resolve_trainer_paths(CheckpointCommand& c, const std::string& cwd);

}  // namespace dl
