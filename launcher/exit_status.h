// A child's wait status as dl-launch reports it: the exit code a shell would show (128+N for
// signal N) and the words for a log line.
#pragma once

#include <string>

namespace dl {

// WEXITSTATUS, or 128 + the signal; exit_code::kInternal for a status that is neither.
int decode_status(int status);
// "exited with code 1", "died of signal 9 (Killed)".
std::string describe_end(int status);

}  // namespace dl
