// Directories and whole files, written so that a crash never leaves half a file: what the launcher
// (plan.json, the batch-size cache) and the trainer (checkpoints) write goes through here.
#pragma once

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
// sees the old file or the new one, never a part. The temporary file is removed on failure.
// Throws UserError 73 "<what failed> <file> (<reason>)".
void write_file_atomic(const std::string& path, std::string_view bytes);

// The whole file. Throws std::runtime_error("<reason>") when it cannot be opened or read.
std::vector<char> read_whole_file(const std::string& path);

// "a/b/c" -> "a/b"; "c" -> "."; "/c" -> "/".
std::string parent_directory(const std::string& path);

}  // namespace dl
