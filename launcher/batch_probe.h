// One trial of the batch-size search: `dl-train --probe-batch N` in a child process of its own,
// with the environment the trainer would get and the workspace as working directory, so that an
// out-of-memory trial (or one the kernel kills) never harms the launcher or the run.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/run_as.h"
#include "launcher/batch_search.h"

namespace dl {

// A probe that runs longer than this is stopped and counts as an error: a batch so slow is not
// a batch to train with either.
constexpr double kProbeTimeoutSeconds = 300;

struct ProbeSetup {
  std::vector<std::string> trainer;  // dl-train's argv (argv[0] absolute)
  std::string workspace;             // working directory
  // The plan's DL_* variables and the rest; DL_BATCH_SIZE is set to each probe's batch.
  std::vector<std::pair<std::string, std::string>> env;
  double timeout_seconds = kProbeTimeoutSeconds;
  // The workspace's owner, whom the probes run as (as the program will), where dl-launch is root
  // on another user's workspace.
  std::optional<Identity> identity;
};

// Runs one probe. A crash, a timeout, a non-zero exit or unreadable output is an error of the
// trial (it does not fit). dl-train refusing its input (exit 64-78: bad setting, data missing or
// malformed, device not available) would refuse to train as well: that throws UserError with
// dl-train's code and its message.
ProbeResult run_batch_probe(const ProbeSetup& setup, std::int64_t batch);

// The trial that the probe's stdout reports (its last line that is a JSON object); an error trial
// when there is none. Exposed for tests.
ProbeResult parse_probe_output(const std::string& out, std::int64_t batch);

// The last non-empty line of dl-train's stderr without its "[12:00:00] error " prefix: the one
// line that says what went wrong.
std::string trainer_error_line(const std::string& err);

// dl-train refused its input (exit 64-78 but 70: a bad setting, data missing or malformed, a
// device not available): training would refuse it too.
bool is_trainer_input_error(int code);

// The LibTorch version in `dl-train --version` ("dl-train 0.1.0 (LibTorch 1.13.0)"), or
// "unknown" when it does not say.
std::string trainer_torch_version(const ProbeSetup& setup);

}  // namespace dl
