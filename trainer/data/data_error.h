// The one exception the data layer throws for bad input: a missing, truncated or malformed data
// file. Its message is a single line that names the file and says what was expected, so the
// program can print it as-is and exit with a distinct code (no stack trace, no context needed).
#pragma once

#include <stdexcept>
#include <string>

namespace dl::data {

class DataError : public std::runtime_error {
 public:
  explicit DataError(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace dl::data
