// Everything decided before the program starts: the facts, the plan, the resolved command, the
// run directory and the environment the program gets. Rendered by the report, written as
// plan.json, executed by the supervisor.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/probe.h"
#include "core/run_as.h"
#include "launcher/plan.h"

namespace dl {

using EnvList = std::vector<std::pair<std::string, std::string>>;

struct Launch {
  Facts facts;
  Request request;
  Plan plan;
  std::string workspace;  // absolute
  std::optional<std::string> config_file;
  std::string run_name;
  std::string run_dir;               // absolute: <workspace>/runs/<name>
  std::vector<std::string> command;  // argv; argv[0] absolute
  EnvList forwarded;  // training settings and the config file, handed on to the program
  EnvList env;        // variables set for the program (DL_*, torchrun, threads, forwarded)
  // The user the program runs as when it is not dl-launch's own (root on another's workspace).
  std::optional<Identity> run_as;
};

// The variables the program gets on top of the launcher's own environment. `lookup` reads the
// launcher's environment: torchrun variables already set (by Slurm, a PyTorchJob, the user) and
// OMP_NUM_THREADS/MKL_NUM_THREADS set by the user are kept, not overridden.
using EnvLookup = std::function<std::optional<std::string>(const char*)>;
EnvList child_environment(const Launch& launch, const EnvLookup& lookup = {});

}  // namespace dl
