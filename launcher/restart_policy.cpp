// Which failures a restart may fix (restart_policy.h).
#include "launcher/restart_policy.h"

namespace dl {

std::string restart_refusal(int code, const SupervisedEnd& end) {
  if (code == 0) return "it succeeded";
  if (end.stop_requested) return "dl-launch was asked to stop";
  // 75: the ranks could not meet, or a peer failed: what a restart is for.
  if (code >= 64 && code <= 79 && code != 75) {
    return "exit " + std::to_string(code) + " is bad settings or data, which a restart repeats";
  }
  if (code == 80) return "the loss diverged (exit 80), which a restart from last.pt repeats";
  if (code == 126 || code == 127) return "the program cannot be started";
  return {};
}

}  // namespace dl
