// Finding the program to start: the default trainer (next to dl-launch, in the build tree's
// trainer/ directory, or on PATH) or the user's command after "--".
#pragma once

#include <string>
#include <vector>

namespace dl {

// Returns argv with argv[0] made absolute. Throws UserError 127 when the program does not exist,
// 126 when it is not executable. A relative path with a '/' is taken from the current directory,
// as a shell would.
std::vector<std::string> resolve_command(std::vector<std::string> argv);

// The default program: `trainer` as a path, or found beside `self_dir` (the launcher's own
// directory), in `self_dir`/../trainer (a build tree), or on PATH.
std::vector<std::string> trainer_command(const std::string& trainer, const std::string& self_dir);

// Directory holding the running executable.
std::string self_directory();

// The companion Python module dl_plan's folder for a program after "--": `self_dir`/../python
// (PREFIX/bin -> PREFIX/python when installed; build/<preset>/launcher -> build/<preset>/python,
// the build tree's link to the source tree's python/), as a realpath, when it holds
// dl_plan/__init__.py as a regular file; "" when it does not. It goes first on the program's
// PYTHONPATH so that `import dl_plan` works without the user exporting anything, and finds the
// dl_plan that speaks this dl-launch's probe protocol rather than another installed one.
std::string companion_directory(const std::string& self_dir);

}  // namespace dl
