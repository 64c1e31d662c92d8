// The live run report (live_report.h): what the page shows, gathered from the run.
#include "train/monitor/live_report.h"

#include <spdlog/spdlog.h>
#include <torch/types.h>
#include <torch/utils.h>
#include <unistd.h>

#include <ctime>
#include <exception>
#include <filesystem>
#include <utility>

#include "core/files.h"
#include "report/plan_summary.h"
#include "train/run/training_run.h"

namespace dl::train {
namespace {

std::string now_text() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

std::string read_if_present(const std::string& path) {
  if (access(path.c_str(), F_OK) != 0) return {};
  try {
    const std::vector<char> bytes = read_whole_file(path);
    return std::string(bytes.begin(), bytes.end());
  } catch (const std::exception& e) {
    spdlog::warn("report: {}", e.what());
    return {};
  }
}

// The best checkpoint as the trainer decides it: the first epoch with the highest val accuracy.
void update_best(report::RunReport& page, const std::string& best_path) {
  page.best.reset();
  for (const auto& e : page.epochs) {
    if (!page.best || e.val_acc > page.best->val_acc) {
      page.best = report::RunReport::Best{e.epoch, e.val_acc, best_path};
    }
  }
}

}  // namespace

LiveReport::LiveReport(const TrainingRun& run)
    : dir_(DirFd::open(run.config.run_dir)),
      path_(run.config.run_dir + "/" + report::kReportFile),
      start_(std::chrono::steady_clock::now()) {
  const TrainConfig& c = run.config;
  page_.run_name = std::filesystem::path(c.run_dir).lexically_normal().filename().string();
  page_.run_dir = c.run_dir;
  page_.epochs_total = c.epochs;
  const std::string plan = read_if_present(c.run_dir + "/plan.json");
  if (plan.empty()) {
    page_.plan_note =
        "no plan.json: dl-train ran without dl-launch, so the settings below are "
        "dl-train's own (its options and defaults)";
  } else {
    report::read_plan_json(plan, page_);
  }
  page_.setup = {
      {"model", run.net->name(), ""},
      {"device", run.device.str(), ""},
      {"precision", precision_name(run.precision.precision), run.precision.reason},
      {"batch", std::to_string(run.batch_size), run.world.size() > 1 ? "per rank" : ""},
      {"threads", std::to_string(torch::get_num_threads()), "compute threads"},
      {"epochs", std::to_string(c.epochs), ""},
      {"data", run.data.location,
       std::to_string(run.data.train->size()) + " training, " +
           std::to_string(run.data.val->size()) + " validation samples"},
  };
  if (run.world.size() > 1) page_.setup.push_back({"ranks", std::to_string(run.world.size()), ""});
  if (run.start_epoch > 0) {
    page_.epochs =
        report::parse_metrics_csv(read_if_present(c.run_dir + "/metrics.csv"), run.start_epoch);
    update_best(page_, run.best_path);
  }
  if (c.monitor_every <= 0)
    page_.resources_note = "the resource monitor is off (--monitor-every 0)";
  write();
}

void LiveReport::add_figures(const MonitorFigures& f) {
  report::ResourcePoint p;
  p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  p.cpu_percent = f.cpu_percent;
  p.ram_percent = f.ram_percent;
  for (const auto& g : f.gpus) {
    const double mem = g.total_bytes > 0 ? 100.0 * static_cast<double>(g.used_bytes) /
                                               static_cast<double>(g.total_bytes)
                                         : 0.0;
    p.gpus.push_back({g.index, g.load_percent, mem});
  }
  history_.add(p);
}

void LiveReport::set_confusion(std::vector<std::string> class_names,
                               std::vector<std::int64_t> counts) {
  page_.class_names = std::move(class_names);
  page_.confusion = std::move(counts);
}

void LiveReport::epoch_done(const TrainingRun& run, const EpochMetrics& m) {
  // An epoch done again (a resume after a stop inside it) replaces its earlier row.
  while (!page_.epochs.empty() && page_.epochs.back().epoch >= m.epoch) page_.epochs.pop_back();
  report::EpochPoint point{
      m.epoch,   m.train_loss,         m.train_acc,         m.val_loss, m.val_acc, m.lr,
      m.seconds, m.samples_per_second, m.data_wait_percent, {},         {}};
  for (std::size_t i = 0; i < kPhases; ++i) {
    const auto p = static_cast<Phase>(i);
    point.time_seconds.emplace_back(phase_name(p), m.time[p]);
  }
  point.bound = verdict(m.time).name;  // as metrics.csv's bound column holds it
  page_.epochs.push_back(std::move(point));
  update_best(page_, run.best_path);
  write();
}

void LiveReport::finish(report::RunState state, const std::string& detail) noexcept {
  try {
    page_.state = state;
    page_.state_detail = detail;
    write();
  } catch (const std::exception& e) {
    spdlog::warn("report: {}", e.what());
  }
}

void LiveReport::write() {
  page_.updated = now_text();
  page_.resources = history_.snapshot();
  try {
    report::write_run_report(dir_, page_);
  } catch (const std::exception& e) {
    if (!warned_) spdlog::warn("report: {} (training goes on)", e.what());
    warned_ = true;
  }
}

}  // namespace dl::train
