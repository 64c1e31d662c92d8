// Whether a program after -- has opted in to the probe protocol, told without starting it. The
// protocol's one implementation is the Python module dl_plan, and a probe runs the program for
// real until it answers: only a command whose own script imports dl_plan (the file named after
// python's options, the module after -m, the code after -c) is probed, never one that merely
// sits in a workspace where some other file does, and one that imports dl_loader alone is not
// (dl_loader reads the plan through dl_plan, which is no promise to answer a probe). The user
// decides otherwise with --probe-command always|never.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace dl {

// A script's first kMaxScannedFileBytes are read: a Python file is text, and an untrusted
// workspace may name a huge file.
constexpr long kMaxScannedFileBytes = 1 << 20;

// A Python program: python* itself, or a .py file among its words.
bool is_python_program(const std::vector<std::string>& command);

// What a command runs, as far as its words tell: Python's script file (python3 [options]
// train.py, ./train.py, torchrun ... train.py, env python3 train.py), a module (-m pkg.mod), code
// (-c '...'), or nothing known (kNone: a program of another kind).
struct CommandScript {
  enum class Kind { kNone, kFile, kModule, kCode };
  Kind kind = Kind::kNone;
  std::string text;  // the file's path as typed, the module's dotted name, or the code
};
CommandScript command_script(const std::vector<std::string>& command);

// The file a script or module of `script` is in, relative to `cwd` where the command runs (a
// module as Python's -m finds it first: cwd/a/b.py or cwd/a/b/__main__.py); "" when there is
// none (or for code and kNone).
std::string script_file(const CommandScript& script, const std::string& cwd);

// Whether Python source text imports dl_plan: an `import ...dl_plan...` or `from dl_plan...`
// statement on a line of its own (indented or not), not a comment or a string's mention.
bool imports_dl_plan(const std::string& source);

// Whether Python source text splits its batches with dl_plan's plan.micro_batches: a call
// `.micro_batches(` on a line that is not a comment (a string's mention counts too: this is a
// hint for the plan's wording, not a proof).
bool splits_micro_batches(const std::string& source);

// The source a Python command runs, as far as its words tell: its script file's first
// kMaxScannedFileBytes, its module's, or its -c code; nullopt when none is known or readable.
// Reads as the calling thread's file-system identity (the caller's ActAs).
std::optional<std::string> command_source(const std::vector<std::string>& command,
                                          const std::string& cwd);

// nullopt when the command is to be probed; else why not, for the plan ("its script python/x.py
// does not import dl_plan"). `mode` is --probe-command's: auto, always or never. Reads the
// script as the calling thread's file-system identity (the caller's ActAs).
std::optional<std::string> why_not_probed(const std::vector<std::string>& command,
                                          const std::string& cwd, const std::string& mode);

}  // namespace dl
