// Whole-file helpers for tests: write what a test needs on disk, read back what a program wrote.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace dl::test {

using Bytes = std::vector<std::uint8_t>;

// Writes `content` to `path` (making missing parent directories) with permission bits `mode`.
// Throws std::runtime_error on failure.
void write_file(const std::string& path, const std::string& content, unsigned mode = 0644);
void write_bytes(const std::string& path, const Bytes& bytes);
// The file's contents; "" when it cannot be read.
std::string read_file(const std::string& path);
bool file_exists(const std::string& path);
// Names in the directory, sorted, without "." and ".."; empty when it cannot be read.
std::vector<std::string> list_dir(const std::string& path);
// NAME=VALUE lines as a map: what `dl_test_child env FILE` wrote (tests/helpers/child.cpp: "cwd",
// "uid", ... and the child's environment), or `env > FILE`; empty when the file cannot be read.
std::map<std::string, std::string> read_env_file(const std::string& path);
// The canonical absolute path (symbolic links resolved); "" when it does not exist.
std::string real_path(const std::string& path);

}  // namespace dl::test
