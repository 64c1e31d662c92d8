// Progress of an epoch: a redrawn bar with ETA on a terminal, plain log lines every N batches
// otherwise (logs, docker logs, CI).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace dl::train {

class Progress {
 public:
  Progress(int epoch, int epochs, std::int64_t batches, int log_every, bool terminal);
  // After batch `index` (0-based); loss and accuracy are the epoch's running means.
  void update(std::int64_t index, double loss, double accuracy, double samples_per_second);
  void finish();

  // "1:02:03", "4:05"
  static std::string format_duration(double seconds);

 private:
  int epoch_, epochs_;
  std::int64_t batches_;
  int log_every_;
  bool terminal_;
  std::chrono::steady_clock::time_point start_;
  bool drawn_ = false;
};

}  // namespace dl::train
