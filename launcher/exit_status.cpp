// Wait statuses in words (exit_status.h).
#include "launcher/exit_status.h"

#include <sys/wait.h>

#include <cstring>

#include "core/errors.h"

namespace dl {

int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return exit_code::kInternal;
}

std::string describe_end(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return "died of signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
  }
  return "exited with code " + std::to_string(decode_status(status));
}

}  // namespace dl
