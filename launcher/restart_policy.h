// dl-launch --max-restarts: after a failed run (a rank's non-zero exit or signal, a lost
// rendezvous), every rank is started again from the newest last.pt, as torchrun's elastic agent
// restarts its workers. What restarting cannot fix is not retried: a stop dl-launch was asked for
// (Ctrl-C, docker stop, scancel), bad settings or bad data (exit 64-79: the same input fails the
// same way; but 75, ranks that could not meet or lost a peer, which is what restarts are for), a
// diverged loss (80: the same steps diverge again), a program that cannot be started (126, 127).
// Pure.
#pragma once

#include <string>

namespace dl {

// How the supervised processes ended, beyond the exit code.
struct SupervisedEnd {
  bool stop_requested = false;  // dl-launch received a stop signal and forwarded it
  int failed_rank = 0;          // the first rank that failed (0 for a single process)
  std::string cause;            // "exited with code 1", "died of signal 9 (Killed)"
};

// Why `code` is not restarted, or "" when it may be (code != 0).
std::string restart_refusal(int code, const SupervisedEnd& end);

}  // namespace dl
