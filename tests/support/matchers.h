// Common checks of text in tests: whether a string holds a piece, and GoogleMock's string matchers
// (HasSubstr, StartsWith, ...) under their own names.
#pragma once

#include <gmock/gmock.h>

#include <string>

namespace dl::test {

using ::testing::AllOf;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

inline bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace dl::test
