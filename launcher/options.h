// dl-launch's command line and configuration: one registry of options read from three sources,
// defaults < the workspace's config file < DL_* environment < command line.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "launcher/plan.h"

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
  int max_restarts = 0;  // runs started again after a failure (restart_policy.h)
  std::string trainer = "dl-train";
  std::string nvml_library;
  std::vector<std::string> command;    // after "--"; empty: the trainer
  bool data_given = false;             // the `data` setting names the training data
  bool retune = false;                 // measure again even when a cache has an answer
  std::string probe_command = "auto";  // auto, always or never: probe a command after --
  bool run_as_owner = true;            // as root, run the program as the workspace's owner
  // Training settings the batch-size cache is keyed by (what the probe measures depends on them).
  std::string model = "cnn";
  std::string data;              // the `data` setting, "" when not given
  std::string data_path;         // ... absolute (a config file's relative path is the workspace's)
  std::string data_source;       // where it came from: "--data", "DL_DATA", "<file>:N: data"
  bool resume = false;           // the `resume` setting
  bool overwrite = false;        // the `overwrite` setting
  bool init_from_given = false;  // --init-from: a --resume without last.pt starts from it
  std::string image_size;        // the `image-size` setting, "" when not given or auto
  std::string input_shape;       // the `input-shape` setting, "" when not given or auto
  // Every setting given (the registry's keys, in its order), its value and its source.
  std::vector<std::pair<std::string, Sourced<std::string>>> settings;
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

// Whether the launcher's option `name` ("workers", or the short "c") takes a value.
bool option_takes_value(const std::string& name);

// Whether the parser gives --name (or -n) the next argument when it is no option: also a flag's
// (`--resume false`), whose value is optional.
bool option_accepts_value(const std::string& name);

// A memory size: plain bytes ("1048576", "1048576B"), or a number with a unit, case-insensitive,
// a space allowed: K, M, G, T and KiB, MiB, GiB, TiB (and Ki, Mi, ...) are binary, as Docker's
// --memory counts them; KB, MB, GB, TB are decimal (SI). "6GiB", "512 MiB", "2g", "1.5GiB".
// nullopt for anything else, for zero, and for 2^64 bytes or more.
std::optional<std::uint64_t> parse_memory_size(const std::string& text);

// Maps "DL_BATCH_SIZE" to "batch-size" when that is an option settable from the environment.
std::string env_to_option(const std::string& variable);

}  // namespace dl
