// Per-epoch metrics, appended to runs/<name>/metrics.csv (a resumed run continues the file).
#pragma once

#include <cstdint>
#include <string>

#include "train/monitor/time_breakdown.h"

namespace dl::train {

struct EpochMetrics {
  int epoch = 0;
  double train_loss = 0, train_acc = 0;
  double val_loss = 0, val_acc = 0;
  double lr = 0;
  double seconds = 0;
  double samples_per_second = 0;
  double data_wait_seconds = 0;
  double data_wait_percent = 0;
  std::int64_t skipped = 0;
  std::int64_t overflow_steps = 0;  // fp16: optimizer steps the loss scaler skipped (inf/NaN)
  TimeBreakdown time;               // where `seconds` went: time_<phase>_s, then the verdict
};

// Appends one row, writing the header first when the file is new. Throws UserError 73 when the
// file cannot be written.
void append_metrics(const std::string& path, const EpochMetrics& m);

}  // namespace dl::train
