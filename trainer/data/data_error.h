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

// The data is not there at all (a wrong path), as opposed to there and malformed: programs exit
// with another code (66 rather than 65), Python raises FileNotFoundError.
class MissingData : public DataError {
 public:
  explicit MissingData(const std::string& message) : DataError(message) {}
};

}  // namespace dl::data
