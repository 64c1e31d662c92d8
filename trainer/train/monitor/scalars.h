// What dl-train shows in TensorBoard: the figures of the log lines, metrics.csv and the monitor,
// named as TensorBoard groups them ("train/", "val/", "epoch/", "amp/", "monitor/"). Accuracies
// are fractions (0..1) and shares percentages, as in metrics.csv.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "report/event_record.h"
#include "train/monitor/metrics.h"
#include "train/monitor/monitor.h"

namespace dl::train {

// The running figures of an epoch at a log point (the progress line's numbers).
struct IntervalFigures {
  double loss = 0, accuracy = 0;  // the epoch's running means so far
  double lr = 0;
  double samples_per_second = 0;
  double data_wait_percent = 0;      // of the epoch's time so far
  std::optional<double> loss_scale;  // fp16 only
  std::int64_t overflow_steps = 0;   // fp16: this epoch's skipped steps so far
};

std::vector<report::Scalar> interval_scalars(const IntervalFigures& f);

// metrics.csv's row: val/loss, val/acc and the epoch's figures.
std::vector<report::Scalar> epoch_scalars(const EpochMetrics& m);

// CPU and RAM percentages, and per GPU its load, memory and temperature.
std::vector<report::Scalar> monitor_scalars(const MonitorFigures& f);

}  // namespace dl::train
