// How a batch probe times its training steps so that two runs of the same probe agree within a
// few percent: the first steps are not timed (the first allocates the optimizer's state and lets
// cuDNN pick its algorithms, the second lets the caching allocator and the CPU's caches settle),
// then steps are timed until there are enough of them and enough time (a 5 ms step is timed 30
// times, a 3 s one 3 times), and their median is the step time (one step slowed by the machine
// does not move it; bench/NOTES.md has the spread measured). dl-train's probe mode and the
// dl_plan companion's step probe follow the same rule.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace dl {

class StepTiming {
 public:
  static constexpr int kWarmupSteps = 2;
  static constexpr std::size_t kMinTimedSteps = 3;
  static constexpr std::size_t kMaxTimedSteps = 30;
  static constexpr double kMinTimedSeconds = 1.0;

  // Step `index` (from 0) took `seconds`; warm-up steps are not kept.
  void add(int index, double seconds) {
    if (index < kWarmupSteps) return;
    timed_.push_back(seconds);
    total_ += seconds;
  }

  // Enough steps timed: at least kMinTimedSteps and kMinTimedSeconds, or kMaxTimedSteps.
  bool done() const {
    return timed_.size() >= kMaxTimedSteps ||
           (timed_.size() >= kMinTimedSteps && total_ >= kMinTimedSeconds);
  }

  std::size_t timed_steps() const { return timed_.size(); }

  // The median timed step (the mean of the middle two for an even count); 0 before any.
  double median() const {
    if (timed_.empty()) return 0;
    std::vector<double> sorted = timed_;
    std::sort(sorted.begin(), sorted.end());
    const std::size_t n = sorted.size();
    return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  }

 private:
  std::vector<double> timed_;
  double total_ = 0;
};

}  // namespace dl
