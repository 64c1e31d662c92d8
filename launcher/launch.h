// Everything decided before the program starts: the facts, the plan, the resolved command, the
// run directory and the environment the program gets. Rendered by the report, written as
// plan.json, executed by the supervisor.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/ports.h"
#include "core/probe.h"
#include "core/run_as.h"
#include "core/run_lock.h"
#include "launcher/plan.h"
#include "launcher/script_cache.h"

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
  std::string companion_dir;         // dl_plan's folder, put on PYTHONPATH for a command after --
  // Every setting given, with its value and where it came from ("--epochs", "DL_EPOCHS",
  // "<file>:3: epochs"): plan.json and --json show them.
  std::vector<std::pair<std::string, Sourced<std::string>>> settings;
  EnvList forwarded;  // training settings and the config file, handed on to the program
  EnvList env;        // variables set for the program (DL_*, torchrun, threads, forwarded)
  // The user the program runs as when it is not dl-launch's own (root on another's workspace).
  std::optional<Identity> run_as;
  // A program after --: what its probes found (or a cache held), stored under the key for the
  // next start.
  std::optional<ScriptProbeRecord> script_probe;
  std::string script_cache_key;
  // The run directory's lock, held while the program runs (shared: a Launch is copied for probes).
  std::shared_ptr<const RunLock> run_lock;
  // Rank 0's port where this launcher picked it, held until the launcher ends (ports.h).
  std::shared_ptr<const PortReservation> port_hold;
  // A dry run that dl-train's refusal would have stopped (the data, a probe): its exit code and
  // line. The plan is still shown, with the line among its warnings; the code is the exit's.
  int refused_code = 0;
  std::string refused;
};

// The variables the process `index` of those started here (plan.ranks[index]) gets on top of the
// launcher's own environment: the plan, its rank's device and share of the cores, and torchrun's
// contract from the plan's topology (which kept a scheduler's values). `lookup` reads the
// launcher's environment: OMP_NUM_THREADS/MKL_NUM_THREADS set by the user are kept, and a
// companion_dir goes in front of the user's PYTHONPATH.
EnvList rank_environment(const Launch& launch, std::size_t index, const EnvLookup& lookup = {});

// The first process's (the only one's, for one process).
EnvList child_environment(const Launch& launch, const EnvLookup& lookup = {});

// The plan file this dl-launch writes and its ranks find in DL_PLAN: plan.json where it starts
// global rank 0, else plan-rank-N.json (N: its first rank), so that dl-launch processes on other
// nodes (or other srun tasks) sharing the workspace never overwrite rank 0's plan.
std::string plan_file_name(const Launch& launch);

}  // namespace dl
