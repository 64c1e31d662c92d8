// Starts the program in its own process group and supervises it: SIGINT, SIGTERM and SIGHUP sent
// to dl-launch are forwarded to the whole group (the trainer and its workers), and a program still
// running a grace period after the first one is killed. This is what lets `docker stop` give the
// trainer its chance to save a checkpoint.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/run_as.h"
#include "launcher/launch.h"
#include "launcher/restart_policy.h"

namespace dl {

struct SpawnSpec {
  std::vector<std::string> argv;  // argv[0] absolute
  std::string cwd;
  EnvList env;  // set on top of the launcher's environment
  double grace_seconds = 30.0;
  // Runs the program as this user (and their group only) instead of the launcher's.
  std::optional<Identity> identity;
  // Descriptors the program keeps (the run lock, DL_RUN_LOCK_FD); every other one above 2 is
  // closed in it.
  std::vector<int> pass_fds;
};

// Runs the program to its end. Returns its exit code, or 128+N when it died of signal N; `end`,
// when given, says whether a stop signal was forwarded and how the program ended.
// Throws UserError 126 when it cannot be started.
int supervise(const SpawnSpec& spec, SupervisedEnd* end = nullptr);

}  // namespace dl
