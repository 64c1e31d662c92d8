// dl-launch's command line and configuration: one registry of options read from three sources,
// defaults < the workspace's config file < DL_* environment < command line.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "plan.h"

namespace dl {

struct LaunchOptions {
  bool help = false;
  bool version = false;
  bool dry_run = false;
  bool json = false;
  Sourced<std::string> workspace;
  std::optional<std::string> config_file;  // the file read, if any
  std::string run_name;                    // empty: a timestamp
  Request request;
  double grace_seconds = 30.0;
  std::string trainer = "dl-train";
  std::string nvml_library;
  std::vector<std::string> command;  // after "--"; empty: the trainer
  bool data_given = false;           // the `data` setting names the training data
  // Training settings from the command line, as DL_* variables for the program.
  std::vector<std::pair<std::string, std::string>> trainer_env;
};

// The name of the workspace's own config file.
constexpr const char* kConfigFileName = "dl.conf";

// Parses argv, the DL_* variables of `environ` and the config file. Throws UserError with the
// offending option, variable or file named.
LaunchOptions parse_options(int argc, const char* const argv[]);

// --help text.
std::string usage_text();

// Maps "DL_BATCH_SIZE" to "batch-size" when that is an option settable from the environment.
std::string env_to_option(const std::string& variable);

}  // namespace dl
