// User-facing failures: one line naming what was wrong and what was expected, and an exit code
// of its own (listed in the README). Anything else reaching main is an internal error.
#pragma once

#include <stdexcept>
#include <string>

namespace dl {

// Exit codes, after BSD's sysexits.h where one fits. The child's own code passes through
// unchanged, and 128+N when it died of signal N.
namespace exit_code {
constexpr int kOk = 0;
constexpr int kUsage = 64;         // unknown option, bad value
constexpr int kBadConfig = 65;     // malformed config file
constexpr int kBadData = 65;       // malformed data set (dl-train)
constexpr int kMissing = 66;       // workspace or config file does not exist
constexpr int kUnavailable = 69;   // asked for a device the machine does not have
constexpr int kInternal = 70;      // a bug: please report it
constexpr int kCantWrite = 73;     // workspace or run directory not writable
constexpr int kNoPermission = 77;  // config file not readable
constexpr int kDiverged = 80;      // the loss became NaN or infinite (dl-train)
constexpr int kNotExecutable = 126;
constexpr int kNotFound = 127;  // the command to start does not exist
}  // namespace exit_code

class UserError : public std::runtime_error {
 public:
  UserError(int code, const std::string& message) : std::runtime_error(message), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

}  // namespace dl
