// The run report: runs/<name>/report.html, one self-contained page (inline CSS, SVG and a few
// lines of script; nothing fetched) that shows a run as it goes: the machine and dl-launch's plan
// with its reasons, the per-epoch curves, the resource monitor over time, the last validation's
// confusion matrix and the best checkpoint. Rank 0 rewrites it at each epoch end and when the run
// ends; while the run is alive the page reloads itself. The renderer is a pure function of a
// plain struct (no LibTorch), so it is cheap to test.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/dir_fd.h"

namespace dl::report {

// One line of a table: a setting, its value and why.
struct ReportRow {
  std::string name, value, reason;
};

// One epoch: metrics.csv's row.
struct EpochPoint {
  int epoch = 0;
  double train_loss = 0, train_acc = 0;  // accuracies are fractions (0 to 1)
  double val_loss = 0, val_acc = 0;
  double lr = 0;
  double seconds = 0;
  double samples_per_second = 0;
  double data_wait_percent = 0;
  // metrics.csv's time_<phase>_s columns, in their order: where the epoch's time went.
  std::vector<std::pair<std::string, double>> time_seconds;
  // metrics.csv's bound column, dl-train's verdict for the epoch ("data-bound"); "" without one.
  std::string bound;
};

// One resource monitor sample; what could not be read is absent.
struct ResourcePoint {
  double seconds = 0;  // since the run (this start of it) began
  std::optional<double> cpu_percent, ram_percent;
  struct Gpu {
    int index = 0;
    double load_percent = 0, memory_percent = 0;
  };
  std::vector<Gpu> gpus;
};

enum class RunState { kRunning, kFinished, kStopped, kFailed };
const char* run_state_name(RunState s);  // "running", "finished", "stopped", "failed"

struct RunReport {
  std::string run_name;
  std::string run_dir;
  RunState state = RunState::kRunning;
  std::string state_detail;  // why it stopped or failed; the last line of a finished run
  std::string updated;       // when this was written, as text ("2026-12-01 02:10:04 UTC")
  int refresh_seconds = 15;  // the page's reload interval while the run is alive
  int epochs_total = 0;

  // dl-launch's plan.json, when the run was launched by it.
  bool has_plan = false;
  std::string plan_note;  // why there is none, or where it came from
  std::vector<ReportRow> machine, plan;
  std::vector<std::string> plan_warnings;
  // The batch-size search's probes (plan.json's batch_search), when one ran: the throughput and
  // memory curves, and why the chosen batch won.
  struct BatchProbe {
    double batch = 0;
    double samples_per_second = 0;  // 0: not timed
    double peak_bytes = 0;
    bool fits = false;
  };
  std::vector<BatchProbe> batch_probes;
  std::int64_t batch_chosen = 0;
  double batch_budget_bytes = 0;
  std::string batch_why;
  // What dl-train itself chose (model, device, precision, batch, workers, data).
  std::vector<ReportRow> setup;

  std::vector<EpochPoint> epochs;
  std::vector<ResourcePoint> resources;
  std::string resources_note;  // why there are none (e.g. --monitor-every 0)

  // The last validation: confusion[true * K + predicted], K = class_names.size(). Empty: none yet.
  std::vector<std::string> class_names;
  std::vector<std::int64_t> confusion;

  struct Best {
    int epoch = 0;
    double val_acc = 0;
    std::string path;
  };
  std::optional<Best> best;
};

// The whole page. Every string of `r` is escaped.
std::string render_run_report(const RunReport& r);

// The report file's name in the run directory.
inline constexpr const char* kReportFile = "report.html";

// Writes render_run_report(r) to `run_dir`/report.html atomically (temporary file, fsync,
// rename, directory fsync: a browser never reads half a page). Throws UserError 73.
void write_run_report(const DirFd& run_dir, const RunReport& r);

}  // namespace dl::report
