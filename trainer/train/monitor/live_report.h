// The run report kept up to date during training (rank 0): report/run_report.h's page, written
// when the run is set up, at each epoch end and when the run ends (finished, stopped or failed).
// It holds what the page needs between writes: the plan, the setup, the epochs (a resumed run's
// earlier ones from metrics.csv) and the resource monitor's samples. No LibTorch in this header.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "core/dir_fd.h"
#include "report/metrics_history.h"
#include "report/run_report.h"
#include "train/monitor/metrics.h"
#include "train/monitor/monitor.h"

namespace dl::train {

struct TrainingRun;

class LiveReport {
 public:
  // Reads plan.json and metrics.csv from the run directory and writes the first page.
  explicit LiveReport(const TrainingRun& run);

  // A monitor sample (called from the monitor's thread).
  void add_figures(const MonitorFigures& f);

  // The last validation's confusion matrix (counts[true * K + predicted], K = names.size()),
  // shown from the next write on; counts that do not fit the names show as none.
  void set_confusion(std::vector<std::string> class_names, std::vector<std::int64_t> counts);

  // After epoch `m`'s checkpoints and metrics: the page with it.
  void epoch_done(const TrainingRun& run, const EpochMetrics& m);

  // The final page: no reload, the state and why. Never throws (it runs on the way out of a
  // failed run, whose own error is the one to report).
  void finish(report::RunState state, const std::string& detail) noexcept;

  const std::string& path() const { return path_; }

 private:
  void write();  // logs a warning when the page cannot be written: a view never ends a run
  DirFd dir_;
  std::string path_;
  report::RunReport page_;
  report::ResourceHistory history_;
  std::chrono::steady_clock::time_point start_;
  bool warned_ = false;
};

}  // namespace dl::train
