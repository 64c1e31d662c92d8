// The workspace and its run directories: checks done before anything is written, run names.
#pragma once

#include <ctime>
#include <string>

namespace dl {

// Absolute path of an existing, writable workspace directory. Throws UserError (66 missing,
// 73 not a directory or not writable), naming `source` ("--workspace", "DL_WORKSPACE").
std::string check_workspace(const std::string& path, const std::string& source);

// `requested` if given, else a timestamp (20261130-051200) made unique among existing runs/.
std::string choose_run_name(const std::string& workspace, const std::string& requested,
                            std::time_t now);

// Creates <workspace>/runs/<name>/ (and runs/). Throws UserError 73 on failure.
std::string create_run_dir(const std::string& workspace, const std::string& name);

}  // namespace dl
