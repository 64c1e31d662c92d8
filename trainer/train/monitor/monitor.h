// The live resource monitor (the tutorial's PerformanceMonitor): every N seconds, on a thread of
// its own, one line with CPU %, RAM % and, per GPU through NVML, load, memory used/total and
// temperature. The same figures can go to a second sink as numbers (TensorBoard's scalars).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace dl::train {

// One sample's figures; what could not be read is absent.
struct MonitorFigures {
  struct Gpu {
    int index = 0;
    double load_percent = 0;
    std::uint64_t used_bytes = 0, total_bytes = 0;
    double temperature_c = 0;
  };
  std::optional<double> cpu_percent;  // busy share since the previous sample
  std::optional<double> ram_percent;
  std::uint64_t ram_used_bytes = 0, ram_total_bytes = 0;
  std::vector<Gpu> gpus;
};

// "monitor: cpu 42% ram 12.5% (2.0 GiB of 16.0 GiB) | gpu0 load 99% mem 1.0 GiB/80.0 GiB 40C"
std::string format_monitor(const MonitorFigures& f);

class Monitor {
 public:
  using Sink = std::function<void(const std::string&)>;
  using FigureSink = std::function<void(const MonitorFigures&)>;
  // Starts reporting to `sink` (the line) and `figures` (the numbers, when set) every
  // `interval_seconds` (no thread when <= 0). `nvml_library` empty: the driver's.
  Monitor(double interval_seconds, Sink sink, std::string nvml_library = {},
          FigureSink figures = {});
  ~Monitor();
  Monitor(const Monitor&) = delete;
  Monitor& operator=(const Monitor&) = delete;

  // One report now (also what the thread logs).
  std::string sample() { return format_monitor(measure()); }
  MonitorFigures measure();

 private:
  void run();
  double interval_;
  Sink sink_;
  std::string nvml_library_;
  FigureSink figures_;
  unsigned long long last_busy_ = 0, last_total_ = 0;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

// CPU time counters from /proc/stat's first line: busy (all but idle and iowait) and total jiffies.
bool read_cpu_jiffies(const std::string& proc_stat, unsigned long long* busy,
                      unsigned long long* total);

}  // namespace dl::train
