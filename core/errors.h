// User-facing failures: one line naming what was wrong and what was expected, and an exit code
// of its own. The codes live in one table (below), from which both programs' --help, the
// reference's table (docs/reference.md, checked by a unit test) and the tests take them.
// Anything else reaching main is an internal error.
#pragma once

#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>

namespace dl {

// Exit codes, after BSD's sysexits.h where one fits. dl-launch passes its child's own code
// through unchanged, and 128+N when it died of signal N.
namespace exit_code {
constexpr int kOk = 0;
constexpr int kUsage = 64;        // unknown option, bad value
constexpr int kBadConfig = 65;    // malformed config file
constexpr int kBadData = 65;      // malformed data set (dl-train)
constexpr int kMissing = 66;      // workspace, config file or data does not exist
constexpr int kUnavailable = 69;  // a device the machine does not have, or too little memory
constexpr int kInternal = 70;     // a bug: please report it
constexpr int kCantWrite = 73;    // workspace or run directory not writable
constexpr int kInUse = 74;        // the run directory is locked by a run still alive
constexpr int kRendezvous =
    75;                        // the ranks could not meet (timeout, port in use), or a peer failed
constexpr int kMismatch = 76;  // weights, checkpoint and data that do not fit each other
constexpr int kNoPermission = 77;    // config file not readable
constexpr int kRunExists = 78;       // a fresh start under a name that holds checkpoints
constexpr int kSomeUnreadable = 79;  // predict: some inputs could not be decoded (the rest were)
constexpr int kDiverged = 80;        // the loss became NaN or infinite (dl-train)
constexpr int kProbeFailed = 81;     // a probe of the user's program failed (docs/python.md)
constexpr int kNotExecutable = 126;
constexpr int kNotFound = 127;  // the command to start does not exist
}  // namespace exit_code

// One row of the table: what the code means for each program ("" where it does not use it).
struct ExitCodeRow {
  std::string_view code;  // "64", or "128+N"
  std::string_view launch;
  std::string_view train;
};

inline constexpr ExitCodeRow kExitCodes[] = {
    {"0", "the program ran and exited 0", "training finished"},
    {"64", "unknown option or bad value (the message names the option, variable or config key)",
     "unknown option or bad value (the message names the option, variable or config key)"},
    {"65", "malformed config file",
     "malformed config file or data set, or too many undecodable samples (--max-bad-fraction)"},
    {"66",
     "workspace, config file, --data or --resume's last.pt does not exist; init: no workspace "
     "template found",
     "data, model file or --resume checkpoint does not exist"},
    {"69",
     "the requested device is not available (no visible GPU, or an NVIDIA driver too old for the "
     "image's CUDA), or no batch fits the memory",
     "the requested device is not available, or the model does not fit even in micro-batches of "
     "1 sample"},
    {"70", "internal error (a bug: please report it)", "internal error (a bug: please report it)"},
    {"73",
     "workspace not writable (the message names its owner) or not a directory, or a symbolic "
     "link where runs/, runs/NAME/ or .dl/ belongs; init: DIR cannot be created",
     "run directory or checkpoint not writable"},
    {"74", "the run name is in use: another run with it is alive (its PID is named)",
     "the run directory is in use by another run still alive (its PID is named)"},
    {"75",
     "the ranks of a distributed run could not be started (no free port, node list unreadable)",
     "the ranks could not meet (rendezvous timeout, port in use) or a collective failed (a peer "
     "died, --dist-timeout passed)"},
    {"76", "",
     "--init-from weights or a checkpoint that do not fit the model (another architecture, no "
     "matching names), or a data set whose classes differ from the checkpoint's"},
    {"77", "config file not readable", "config file not readable"},
    {"78",
     "a fresh start under a --name whose run directory holds checkpoints (--resume continues "
     "it, --overwrite replaces them)",
     "a fresh start in a run directory that holds checkpoints (--resume continues it, "
     "--overwrite replaces them)"},
    {"79", "",
     "predict: some inputs could not be decoded (each is named in the CSV; the rest were "
     "predicted)"},
    {"80", "", "the loss became NaN or infinite (the last good checkpoint is kept)"},
    {"81",
     "a probe of the program after -- failed: it crashed, hung past its limit or reported an "
     "error (the message names the probe and its log file)",
     ""},
    {"126", "the command is not executable, or cannot be started as the workspace's owner", ""},
    {"127", "the command (or the trainer) was not found", ""},
    {"128+N",
     "the program died of signal N (137: killed after the grace period), or dl-launch was "
     "stopped by signal N before the program started (130 SIGINT, 143 SIGTERM, 129 SIGHUP)",
     "stopped by signal N, after saving last.pt"},
};

enum class Program { kLaunch, kTrain };

// "Exit codes:" and one line per code the program uses, for --help.
std::string exit_code_help(Program program);

// The reference's Markdown table: code, dl-launch, dl-train.
std::string exit_code_table();

class UserError : public std::runtime_error {
 public:
  UserError(int code, const std::string& message) : std::runtime_error(message), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

// The end of both programs' main: the body's exit code, or the error that escaped it reported
// as one line through `say(line, internal)` and turned into its code (70 for anything but a
// UserError, whose line asks for a bug report).
template <class Body, class Say>
int run_reporting_errors(Body&& body, Say&& say) {
  try {
    return body();
  } catch (const UserError& e) {
    say(std::string(e.what()), false);
    return e.code();
  } catch (const std::exception& e) {
    say("internal error: " + std::string(e.what()) + " (please report it)", true);
    return exit_code::kInternal;
  }
}

}  // namespace dl
