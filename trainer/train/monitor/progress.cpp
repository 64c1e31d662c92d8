// Progress bar and log lines.
#include "train/monitor/progress.h"

#include <spdlog/spdlog.h>

#include <cstdio>

namespace dl::train {

Progress::Progress(int epoch, int epochs, std::int64_t batches, int log_every, bool terminal)
    : epoch_(epoch),
      epochs_(epochs),
      batches_(batches),
      log_every_(log_every),
      terminal_(terminal),
      start_(std::chrono::steady_clock::now()) {}

std::string Progress::format_duration(double seconds) {
  const auto s = static_cast<long long>(seconds + 0.5);
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", s / 3600, (s / 60) % 60, s % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%lld:%02lld", s / 60, s % 60);
  }
  return buf;
}

void Progress::update(std::int64_t index, double loss, double accuracy, double samples_per_second) {
  const std::int64_t done = index + 1;
  if (terminal_) {
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const double eta = elapsed / static_cast<double>(done) * static_cast<double>(batches_ - done);
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(kWidth * done / std::max<std::int64_t>(1, batches_));
    std::string bar(static_cast<std::size_t>(filled), '=');
    if (filled < kWidth)
      bar += '>' + std::string(static_cast<std::size_t>(kWidth - filled - 1), ' ');
    std::printf("\repoch %d/%d [%s] %lld/%lld loss %.4f acc %.2f%% %.0f samples/s ETA %s   ",
                epoch_, epochs_, bar.c_str(), static_cast<long long>(done),
                static_cast<long long>(batches_), loss, 100.0 * accuracy, samples_per_second,
                format_duration(eta).c_str());
    std::fflush(stdout);
    drawn_ = true;
  } else if (done % log_every_ == 0 || done == batches_) {
    spdlog::info("epoch {}/{} batch {}/{} loss {:.4f} acc {:.2f}% {:.0f} samples/s", epoch_,
                 epochs_, done, batches_, loss, 100.0 * accuracy, samples_per_second);
  }
}

void Progress::finish() {
  if (drawn_) {
    std::printf("\n");
    std::fflush(stdout);
  }
}

}  // namespace dl::train
