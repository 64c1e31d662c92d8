// Resource monitor. Reads /proc and NVML through dl::host; a machine without NVML reports CPU and
// RAM only.
#include "train/monitor.h"

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

Monitor::Monitor(double interval_seconds, Sink sink, std::string nvml_library)
    : interval_(interval_seconds), sink_(std::move(sink)), nvml_library_(std::move(nvml_library)) {
  sample();  // prime the CPU counters so the first report covers an interval
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

std::string Monitor::sample() {
  const SystemHost host;
  std::string line = "monitor:";
  unsigned long long busy = 0, total = 0;
  if (read_cpu_jiffies(host.read_file("/proc/stat").value_or(""), &busy, &total)) {
    if (total > last_total_ && last_total_ != 0) {
      const double pct =
          100.0 * static_cast<double>(busy - last_busy_) / static_cast<double>(total - last_total_);
      char buf[48];
      std::snprintf(buf, sizeof buf, " cpu %.0f%%", pct);
      line += buf;
    }
    last_busy_ = busy;
    last_total_ = total;
  }
  const std::string meminfo = host.read_file("/proc/meminfo").value_or("");
  const auto mem_total = meminfo_bytes(meminfo, "MemTotal");
  const auto mem_avail = meminfo_bytes(meminfo, "MemAvailable");
  if (mem_total && mem_avail && *mem_total > 0) {
    const std::uint64_t used = *mem_total - std::min(*mem_total, *mem_avail);
    char buf[96];
    std::snprintf(buf, sizeof buf, " ram %.1f%% (%s of %s)",
                  100.0 * static_cast<double>(used) / static_cast<double>(*mem_total),
                  format_bytes(used).c_str(), format_bytes(*mem_total).c_str());
    line += buf;
  }
  std::string why;
  if (auto nvml = Nvml::open(nvml_library_, &why)) {
    for (int i = 0; i < nvml->device_count(); ++i) {
      const auto u = nvml->utilization(i);
      if (!u) continue;
      char buf[160];
      std::snprintf(buf, sizeof buf, " | gpu%d load %u%% mem %s/%s %uC", i, u->gpu_percent,
                    format_bytes(u->used_bytes).c_str(), format_bytes(u->total_bytes).c_str(),
                    u->temperature_c);
      line += buf;
    }
  }
  return line;
}

void Monitor::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  const auto period = std::chrono::duration<double>(interval_);
  while (!wake_.wait_for(lock, period, [this] { return stop_; })) {
    lock.unlock();
    sink_(sample());
    lock.lock();
  }
}

}  // namespace dl::train
