// For the harnesses whose reader takes a path: the input written to a file in a directory of this
// process's own (made once, under $TMPDIR or /tmp), so the reader opens it as it would a user's.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace dl::fuzz {

// Where a harness stores what it read back, so the reads are not optimised away.
inline volatile std::int64_t sink = 0;

inline const std::string& scratch_dir() {
  static const std::string dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/dl-fuzz.XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) {
      std::perror("mkdtemp");
      std::abort();
    }
    return pattern;
  }();
  return dir;
}

// Writes `size` bytes to scratch_dir()/name and returns the path; a failure to write is not the
// reader's and aborts.
inline std::string write_input(const std::string& name, const std::uint8_t* data,
                               std::size_t size) {
  const std::string path = scratch_dir() + "/" + name;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr || (size > 0 && std::fwrite(data, 1, size, f) != size) || std::fclose(f) != 0) {
    std::perror(path.c_str());
    std::abort();
  }
  return path;
}

}  // namespace dl::fuzz
