// metrics.csv writer.
#include "train/monitor/metrics.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/errors.h"

namespace dl::train {

void append_metrics(const std::string& path, const EpochMetrics& m) {
  struct stat st {};
  const bool fresh = stat(path.c_str(), &st) != 0 || st.st_size == 0;
  std::FILE* f = std::fopen(path.c_str(), "a");
  if (f == nullptr) {
    throw UserError(exit_code::kCantWrite, "cannot write " + path + ": " + std::strerror(errno));
  }
  if (fresh) {
    std::fprintf(f,
                 "epoch,train_loss,train_acc,val_loss,val_acc,lr,epoch_seconds,samples_per_second,"
                 "data_wait_seconds,data_wait_percent,skipped_samples,overflow_steps");
    for (std::size_t i = 0; i < kPhases; ++i) {
      std::fprintf(f, ",time_%s_s", phase_name(static_cast<Phase>(i)));
    }
    std::fprintf(f, ",bound\n");
  }
  std::fprintf(f, "%d,%.6f,%.6f,%.6f,%.6f,%.8g,%.3f,%.1f,%.3f,%.2f,%lld,%lld", m.epoch,
               m.train_loss, m.train_acc, m.val_loss, m.val_acc, m.lr, m.seconds,
               m.samples_per_second, m.data_wait_seconds, m.data_wait_percent,
               static_cast<long long>(m.skipped), static_cast<long long>(m.overflow_steps));
  for (const double s : m.time.seconds) std::fprintf(f, ",%.3f", s);
  std::fprintf(f, ",%s\n", verdict(m.time).name.c_str());
  if (std::fclose(f) != 0) {
    throw UserError(exit_code::kCantWrite, "cannot write " + path + ": " + std::strerror(errno));
  }
}

}  // namespace dl::train
