// Running a program to its end with its output captured and a deadline: what the batch-size search
// needs of each probe (and of `dl-train --version`). The supervisor is for the training program
// itself, whose output goes to the terminal and whose stop signals are forwarded.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/run_as.h"

namespace dl {

struct CapturedRun {
  using Env = std::vector<std::pair<std::string, std::string>>;

  int code = -1;           // exit status, or 128+N when it died of signal N; -1: not started
  int signal = 0;          // N when it died of signal N
  bool timed_out = false;  // killed at the deadline
  bool stopped = false;    // killed because `stop_when` said so
  std::string out, err;
  std::string start_error;  // why it could not be started ("cannot enter /ws: Permission denied")
};

// Runs argv (argv[0] a path) in `cwd` with the launcher's environment plus `env` (which wins;
// within `env`, the last value of a name), as `identity` where one is given (its uid, gid and that
// group alone, taken before the child enters `cwd`), stdin from /dev/null, stdout and stderr
// captured (a program that prints without end keeps its first 64 KiB and last 4 MiB, with a
// line saying what was left out). The child leads a process group of its own, killed with SIGKILL
// after `timeout_seconds`, or as soon as `stop_when` (asked about every 100 ms while it runs)
// returns true. A stop signal (stop_request.h), before the start or while the child runs, kills
// the group, reaps the child and throws StopRequested naming the current StopPhase.
CapturedRun run_captured(const std::vector<std::string>& argv, const std::string& cwd,
                         const CapturedRun::Env& env, double timeout_seconds,
                         const std::optional<Identity>& identity = std::nullopt,
                         const std::function<bool()>& stop_when = {});

}  // namespace dl
