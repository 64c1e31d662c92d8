// Seconds on the steady clock since a moment: how the trainer times its phases and probes.
#pragma once

#include <chrono>

namespace dl {

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace dl
