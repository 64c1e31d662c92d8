// The live resource monitor (the tutorial's PerformanceMonitor): every N seconds, on a thread of
// its own, one line with CPU %, RAM % and, per GPU through NVML, load, memory used/total and
// temperature.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace dl::train {

class Monitor {
 public:
  using Sink = std::function<void(const std::string&)>;
  // Starts reporting to `sink` every `interval_seconds` (no thread when <= 0). `nvml_library`
  // empty: the driver's.
  Monitor(double interval_seconds, Sink sink, std::string nvml_library = {});
  ~Monitor();
  Monitor(const Monitor&) = delete;
  Monitor& operator=(const Monitor&) = delete;

  // One report now (also what the thread logs).
  std::string sample();

 private:
  void run();
  double interval_;
  Sink sink_;
  std::string nvml_library_;
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
