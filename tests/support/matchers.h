// Common checks of text in tests: whether a string holds a piece, and GoogleMock's string matchers
// (HasSubstr, StartsWith, ...) under their own names.
#pragma once

#include <gmock/gmock.h>

#include <string>

namespace dl::test {

using ::testing::AllOf;
using ::testing::ContainsRegex;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

inline bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// How many times `needle` occurs in `haystack` (overlapping occurrences counted).
inline int count_of(const std::string& haystack, const std::string& needle) {
  int n = 0;
  for (auto at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

}  // namespace dl::test
