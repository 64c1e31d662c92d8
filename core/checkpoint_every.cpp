// --checkpoint-every's value and schedule (checkpoint_every.h).
#include "core/checkpoint_every.h"

#include <cmath>
#include <cstdlib>

#include "core/text.h"

namespace dl {

bool CheckpointEvery::due(std::int64_t global_step, double seconds_since_last) const {
  if (steps > 0 && global_step > 0 && global_step % steps == 0) return true;
  return seconds > 0 && seconds_since_last >= seconds;
}

std::string CheckpointEvery::describe() const {
  if (steps > 0) return "every " + std::to_string(steps) + " steps";
  if (seconds <= 0) return "at epoch ends only";
  if (seconds >= 3600 && std::fmod(seconds, 3600) == 0) {
    return "every " + format_number(seconds / 3600) + " h";
  }
  if (seconds >= 60 && std::fmod(seconds, 60) == 0) {
    return "every " + format_number(seconds / 60) + " min";
  }
  return "every " + format_number(seconds) + " s";
}

std::optional<CheckpointEvery> parse_checkpoint_every(const std::string& text) {
  if (text.empty()) return std::nullopt;
  CheckpointEvery every;
  const char last = text.back();
  if (last >= '0' && last <= '9') {
    const auto n = parse_u64(text);
    if (!n || *n > (1ull << 62)) return std::nullopt;
    every.steps = static_cast<std::int64_t>(*n);
    return every;
  }
  double unit = 0;
  if (last == 's') unit = 1;
  if (last == 'm') unit = 60;
  if (last == 'h') unit = 3600;
  if (unit == 0 || text.size() < 2) return std::nullopt;
  const std::string number = text.substr(0, text.size() - 1);
  // Digits and at most one point: strtod would also take "inf", "1e9" or " 5".
  int points = 0;
  for (const char c : number) {
    if (c == '.') {
      ++points;
    } else if (c < '0' || c > '9') {
      return std::nullopt;
    }
  }
  if (points > 1 || number == ".") return std::nullopt;
  every.seconds = std::strtod(number.c_str(), nullptr) * unit;
  if (every.seconds > 366.0 * 86400) return std::nullopt;
  return every;
}

}  // namespace dl
