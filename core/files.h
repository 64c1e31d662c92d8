// Directories and whole files, written so that a crash never leaves half a file: what the launcher
// (plan.json, the batch-size cache) and the trainer (checkpoints) write goes through here.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

namespace dl {

// Creates the directory `path` (its parent must exist); one that exists already is fine.
// Throws UserError 73 "cannot create <path>: <reason>".
void make_dir(const std::string& path);

// Creates `path` and any missing parents ("mkdir -p").  Throws as make_dir.
void make_dirs(const std::string& path);

// Writes "<path>.tmp.<pid>", fsyncs it, renames it over `path` and fsyncs the directory: a reader
// sees the old file or the new one, never a part. The temporary file is removed on failure, and
// holds an flock until the rename, which marks it as in use. Temporaries of `path` that earlier
// writers left (remove_stale_temporaries) are removed first.
// Throws UserError 73 "<what failed> <file> (<reason>)".
void write_file_atomic(const std::string& path, std::string_view bytes);

// Removes what a writer of `path` killed mid-write (kill -9, OOM killer, power loss) left behind:
// files named "<name of path>.tmp.<digits>" beside it that are regular files (links are neither
// followed nor removed, nor is anything else) and that no process holds locked, so a write in
// progress, in this process or another (another container's pid namespace too), is never touched.
// Returns the names removed. Best effort: what cannot be examined or removed stays.
std::vector<std::string> remove_stale_temporaries(const std::string& path);

// The whole file. Throws std::runtime_error("<reason>") when it cannot be opened or read, or is not
// a regular file ("is a FIFO, not a regular file"): a FIFO is refused without waiting for a
// writer.
std::vector<char> read_whole_file(const std::string& path);

// "is a FIFO, not a regular file" and the like, for a file of type `mode` (stat's st_mode).
std::string not_regular_file(mode_t mode);

// The process's working directory ("." when it cannot be named).
std::string current_directory();

// `path` made absolute against `base` and normalised lexically ("ws/./data" -> "/home/u/ws/data");
// an absolute or empty path, and a URL (s3://..., https://...), is returned as it is.
std::string absolute_path(const std::string& path, const std::string& base);

// "a/b/c" -> "a/b"; "c" -> "."; "/c" -> "/".
std::string parent_directory(const std::string& path);

}  // namespace dl
