// Several ranks under one dl-launch: each started in its own process group (as the workers of a
// single program are), its stdout and stderr in runs/<name>/rank-N.log and, for the ranks shown,
// on the terminal (its stdout on dl-launch's stdout, its stderr on dl-launch's stderr). Stop
// signals go to every rank; the first rank that fails (a non-zero exit, a signal) stops the others:
// SIGTERM, then SIGKILL after the grace period. torchrun's behaviour, without its restarts.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/run_as.h"
#include "launcher/launch.h"
#include "launcher/restart_policy.h"

namespace dl {

struct RankSpawn {
  int global_rank = 0;
  EnvList env;            // on top of the launcher's environment
  std::vector<int> cpus;  // the CPUs it is pinned to (sched_setaffinity); empty: not pinned
  bool shown = false;     // its output also goes to the terminal (dl-launch's stdout)
};

struct RankGroupSpec {
  std::vector<std::string> argv;  // argv[0] absolute
  std::string cwd;
  std::string log_dir;  // rank-N.log files go here (the run directory, which must exist)
  double grace_seconds = 30.0;
  std::optional<Identity> identity;  // runs the ranks as this user; their logs are theirs
  bool prefix = false;               // shown lines start with "[rank N] "
  // Descriptors every rank keeps (the run lock, DL_RUN_LOCK_FD); every other one above 2 is
  // closed in them.
  std::vector<int> pass_fds;
  std::vector<RankSpawn> ranks;
};

// "rank-3.log"
std::string rank_log_name(int global_rank);

// Runs every rank to its end. Returns 0 when all exited 0, else the first failure's exit code
// (128+N for signal N), which is also reported in one line naming the rank, its code or signal
// and its log. Throws UserError 73 when a log cannot be created safely, 126 when a rank cannot be
// started (the ranks already started are stopped first).
// `end`, when given, says whether a stop signal was forwarded and which rank failed first, how.
int supervise_ranks(const RankGroupSpec& spec, SupervisedEnd* end = nullptr);

}  // namespace dl
