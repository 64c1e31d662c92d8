// The epochs a resumed run already did, read back from its metrics.csv for the run report's
// curves, and the resource monitor's samples kept for them (bounded, from the monitor's thread).
#pragma once

#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

#include "report/run_report.h"

namespace dl::report {

// metrics.csv's rows (columns found by the header's names) with epoch <= `up_to`; a row repeated
// for an epoch (an epoch redone after a stop) keeps the last. Lines that do not parse are skipped.
std::vector<EpochPoint> parse_metrics_csv(const std::string& text, int up_to);

// Resource samples, at most `capacity`: when full, every other one is dropped, so the history
// always spans the whole run at a resolution that halves as it grows. Thread-safe.
class ResourceHistory {
 public:
  explicit ResourceHistory(std::size_t capacity = 720) : capacity_(capacity < 2 ? 2 : capacity) {}
  void add(const ResourcePoint& p);
  std::vector<ResourcePoint> snapshot() const;

 private:
  std::size_t capacity_;
  mutable std::mutex mutex_;
  std::vector<ResourcePoint> points_;
};

}  // namespace dl::report
