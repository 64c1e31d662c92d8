// Whether a program after -- can speak the probe protocol, told without starting it: the
// protocol's one implementation is the Python module dl_plan, so a program that is not Python, or
// whose Python files (the command's own and the workspace's) never name dl_plan, is not started
// in probe mode at all: its plan says so at once instead of after a handshake's wait.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace dl {

// Bounds of the workspace scan: a workspace is untrusted and may hold a data set of .py files.
constexpr int kMaxScannedFiles = 4000;
constexpr long kMaxScannedFileBytes = 1 << 20;

// A Python program: python* itself, or a .py file among its words.
bool is_python_program(const std::vector<std::string>& command);

// nullopt when the command may speak the protocol (a Python program naming dl_plan somewhere the
// scan looked, or one run with -m, whose module the scan cannot find); else why it cannot ("it
// is not a Python program", "no Python file of the command or the workspace imports dl_plan").
// Reads as the calling thread's file-system identity (the caller's ActAs); follows no link below
// the workspace; skips hidden folders, runs/ and data/.
std::optional<std::string> cannot_speak_protocol(const std::vector<std::string>& command,
                                                 const std::string& workspace);

}  // namespace dl
