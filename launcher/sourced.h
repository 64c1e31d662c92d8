// A value with where it came from, and a value with why it was chosen: what every plan entry is.
#pragma once

#include <string>

namespace dl {

// A value and where it came from ("--workers", "DL_WORKERS", "/ws/dl.conf", "default").
template <typename T>
struct Sourced {
  T value{};
  std::string source = "default";
};

template <typename T>
struct Choice {
  T value{};
  std::string reason;
};

}  // namespace dl
