// The workspace and its run directories: checks done before anything is written, run names.
#pragma once

#include <ctime>
#include <string>
#include <vector>

namespace dl {

// Absolute path of an existing, writable workspace directory. Throws UserError (66 missing,
// 73 not a directory or not writable), naming `source` ("--workspace", "DL_WORKSPACE").
std::string check_workspace(const std::string& path, const std::string& source);

// `requested` if given, else a timestamp (20261130-051200) made unique among existing runs/.
std::string choose_run_name(const std::string& workspace, const std::string& requested,
                            std::time_t now);

// The checkpoints an earlier run left in `run_dir` ("last.pt", "best.pt"; a link or any other
// file under those names counts too), in that order; empty when there are none.
std::vector<std::string> run_checkpoints(const std::string& run_dir);

// Refuses (UserError 78) a fresh start in `run_dir` where an earlier run left checkpoints: a
// command typed again must not replace what that run saved. The line names the folder and the
// ways on: --resume, another --name, or --overwrite.
void refuse_overwrite(const std::string& run_dir);

// After a refused start (the program exited 64-79 on bad input) in a run directory that start
// created: removes the directory `name` in `parent_fd` (runs/) and what it holds, relative to the
// descriptor and without following links, when it holds only what a start writes first (the
// plan, run.lock, train.log, rank-N.log); anything else keeps it whole. Returns whether it was
// removed.
bool remove_refused_run_dir(int parent_fd, const std::string& name);

// Creates <workspace>/runs/<name>/ (and runs/). Throws UserError 73 on failure.
std::string create_run_dir(const std::string& workspace, const std::string& name);

}  // namespace dl
