// Whole-file reads and crash-safe whole-file writes, for checkpoints: a reader never sees a half
// written file, and a failed or interrupted write leaves the previous one in place.
#pragma once

#include <string>
#include <vector>

namespace dl::model {

// Writes "<path>.tmp.<pid>", fsyncs it, renames it over `path` and fsyncs the directory.
// Throws std::runtime_error("<what failed> (<strerror>)"); the temporary file is removed.
void write_file_atomically(const std::string& path, const std::vector<char>& bytes);

// Throws std::runtime_error("<strerror>") when the file cannot be opened or read.
std::vector<char> read_whole_file(const std::string& path);

}  // namespace dl::model
