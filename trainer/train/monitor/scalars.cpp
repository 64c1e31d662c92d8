// The scalars' tags, one place for all of them (docs/training.md lists the same).
#include "train/monitor/scalars.h"

#include <string>

namespace dl::train {
namespace {

void put(std::vector<report::Scalar>& out, std::string tag, double value) {
  out.push_back({std::move(tag), static_cast<float>(value)});
}

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

}  // namespace

std::vector<report::Scalar> interval_scalars(const IntervalFigures& f) {
  std::vector<report::Scalar> out;
  put(out, "train/loss", f.loss);
  put(out, "train/acc", f.accuracy);
  put(out, "train/lr", f.lr);
  put(out, "train/samples_per_s", f.samples_per_second);
  put(out, "train/data_wait_percent", f.data_wait_percent);
  if (f.loss_scale) {
    put(out, "amp/loss_scale", *f.loss_scale);
    put(out, "amp/overflow_steps", static_cast<double>(f.overflow_steps));
  }
  return out;
}

std::vector<report::Scalar> epoch_scalars(const EpochMetrics& m) {
  std::vector<report::Scalar> out;
  put(out, "val/loss", m.val_loss);
  put(out, "val/acc", m.val_acc);
  put(out, "epoch/epoch", m.epoch);
  put(out, "epoch/train_loss", m.train_loss);
  put(out, "epoch/train_acc", m.train_acc);
  put(out, "epoch/lr", m.lr);
  put(out, "epoch/seconds", m.seconds);
  put(out, "epoch/samples_per_s", m.samples_per_second);
  put(out, "epoch/data_wait_seconds", m.data_wait_seconds);
  put(out, "epoch/data_wait_percent", m.data_wait_percent);
  put(out, "epoch/skipped_samples", static_cast<double>(m.skipped));
  put(out, "epoch/overflow_steps", static_cast<double>(m.overflow_steps));
  // Where the epoch's time went, a share a phase (a stacked view in TensorBoard's custom charts).
  const double total = m.time.total();
  for (std::size_t i = 0; i < kPhases; ++i) {
    const auto p = static_cast<Phase>(i);
    put(out, std::string("time/") + phase_name(p) + "_percent",
        total > 0 ? 100.0 * m.time[p] / total : 0.0);
  }
  return out;
}

std::vector<report::Scalar> monitor_scalars(const MonitorFigures& f) {
  std::vector<report::Scalar> out;
  if (f.cpu_percent) put(out, "monitor/cpu_percent", *f.cpu_percent);
  if (f.ram_percent) {
    put(out, "monitor/ram_percent", *f.ram_percent);
    put(out, "monitor/ram_used_gib", static_cast<double>(f.ram_used_bytes) / kGiB);
  }
  for (const auto& g : f.gpus) {
    const std::string gpu = "monitor/gpu" + std::to_string(g.index) + "_";
    put(out, gpu + "load_percent", g.load_percent);
    put(out, gpu + "mem_used_gib", static_cast<double>(g.used_bytes) / kGiB);
    if (g.total_bytes > 0) {
      put(out, gpu + "mem_percent",
          100.0 * static_cast<double>(g.used_bytes) / static_cast<double>(g.total_bytes));
    }
    put(out, gpu + "temperature_c", g.temperature_c);
  }
  return out;
}

}  // namespace dl::train
