// Resource monitor. Reads /proc and NVML through dl::host; a machine without NVML reports CPU and
// RAM only.
#include "train/monitor/monitor.h"

#include <chrono>
#include <cstdio>
#include <memory>
#include <sstream>
#include <utility>

#include "core/nvml.h"
#include "core/probe.h"
#include "core/system_host.h"
#include "core/text.h"

namespace dl::train {

bool read_cpu_jiffies(const std::string& proc_stat, unsigned long long* busy,
                      unsigned long long* total) {
  std::istringstream in(proc_stat);
  std::string label;
  in >> label;
  if (label != "cpu") return false;
  unsigned long long v[8] = {};
  for (auto& x : v) {
    if (!(in >> x)) return false;
  }
  // user nice system idle iowait irq softirq steal
  *total = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
  *busy = *total - v[3] - v[4];
  return true;
}

Monitor::Monitor(double interval_seconds, Sink sink, std::string nvml_library, FigureSink figures)
    : interval_(interval_seconds),
      sink_(std::move(sink)),
      nvml_library_(std::move(nvml_library)),
      figures_(std::move(figures)) {
  measure();  // prime the CPU counters so the first report covers an interval
  if (interval_ > 0) thread_ = std::thread([this] { run(); });
}

Monitor::~Monitor() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

MonitorFigures Monitor::measure() {
  const SystemHost host;
  MonitorFigures f;
  unsigned long long busy = 0, total = 0;
  if (read_cpu_jiffies(host.read_file("/proc/stat").value_or(""), &busy, &total)) {
    if (total > last_total_ && last_total_ != 0) {
      f.cpu_percent =
          100.0 * static_cast<double>(busy - last_busy_) / static_cast<double>(total - last_total_);
    }
    last_busy_ = busy;
    last_total_ = total;
  }
  const std::string meminfo = host.read_file("/proc/meminfo").value_or("");
  const auto mem_total = meminfo_bytes(meminfo, "MemTotal");
  const auto mem_avail = meminfo_bytes(meminfo, "MemAvailable");
  if (mem_total && mem_avail && *mem_total > 0) {
    f.ram_used_bytes = *mem_total - std::min(*mem_total, *mem_avail);
    f.ram_total_bytes = *mem_total;
    f.ram_percent = 100.0 * static_cast<double>(f.ram_used_bytes) / static_cast<double>(*mem_total);
  }
  std::string why;
  if (auto nvml = Nvml::open(nvml_library_, &why)) {
    for (int i = 0; i < nvml->device_count(); ++i) {
      const auto u = nvml->utilization(i);
      if (!u) continue;
      f.gpus.push_back({i, static_cast<double>(u->gpu_percent), u->used_bytes, u->total_bytes,
                        static_cast<double>(u->temperature_c)});
    }
  }
  return f;
}

std::string format_monitor(const MonitorFigures& f) {
  std::string line = "monitor:";
  if (f.cpu_percent) {
    char buf[48];
    std::snprintf(buf, sizeof buf, " cpu %.0f%%", *f.cpu_percent);
    line += buf;
  }
  if (f.ram_percent) {
    char buf[96];
    std::snprintf(buf, sizeof buf, " ram %.1f%% (%s of %s)", *f.ram_percent,
                  format_bytes(f.ram_used_bytes).c_str(), format_bytes(f.ram_total_bytes).c_str());
    line += buf;
  }
  for (const auto& g : f.gpus) {
    char buf[160];
    std::snprintf(buf, sizeof buf, " | gpu%d load %.0f%% mem %s/%s %.0fC", g.index, g.load_percent,
                  format_bytes(g.used_bytes).c_str(), format_bytes(g.total_bytes).c_str(),
                  g.temperature_c);
    line += buf;
  }
  return line;
}

void Monitor::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  const auto period = std::chrono::duration<double>(interval_);
  while (!wake_.wait_for(lock, period, [this] { return stop_; })) {
    lock.unlock();
    const MonitorFigures figures = measure();
    sink_(format_monitor(figures));
    if (figures_) figures_(figures);
    lock.lock();
  }
}

}  // namespace dl::train
