// --checkpoint-every: how often a training run writes last.pt between epoch ends, so that a
// kill -9 or a lost node loses at most that much. A number of optimizer steps ("500") or a time
// ("30s", "10m", "2h"); "0" writes at epoch ends only. Pure: the trainer asks due() after each
// step.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace dl {

struct CheckpointEvery {
  std::int64_t steps = 0;  // every this many steps (0: not by steps)
  double seconds = 0;      // every this many seconds of training (0: not by time)

  bool enabled() const { return steps > 0 || seconds > 0; }
  // Whether a checkpoint is due after `global_step` (steps counted over the whole run, so the
  // points do not move when a run is resumed) given the seconds since the last one was written.
  bool due(std::int64_t global_step, double seconds_since_last) const;
  // "every 500 steps", "every 10 min", "at epoch ends only".
  std::string describe() const;
};

// "500", "30s", "10m", "1.5h", "0". nullopt for anything else.
std::optional<CheckpointEvery> parse_checkpoint_every(const std::string& text);

}  // namespace dl
