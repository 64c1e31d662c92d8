// The prescriptions drawn from a run's measurements (prescription.h).
#include "train/monitor/prescription.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace dl::train {
namespace {

void data_bound(const RunFigures& f, std::vector<std::string>& out) {
  const double total = f.time.total();
  const double waited = f.time[Phase::kData];
  // Measured: the run without its wait.
  out.push_back(fmt::format(
      "waiting for data took {:.3g} s of {:.3g}: fed as fast as its steps ran, the run would "
      "take up to {:.0f}% less time",
      waited, total, 100.0 * waited / total));
  std::optional<double> load_seconds;  // a batch loaded by one thread, as measured at start
  if (f.costs && f.costs->step_seconds.count(f.threads) != 0) {
    const PipelineCosts& c = *f.costs;
    load_seconds = c.load_seconds;
    const double now = predict_batch_seconds(c, f.workers, f.threads);
    const PipelineChoice best = choose_pipeline(c, PipelineLimits{});
    if (best.predicted_seconds < (1.0 - kWorthIt) * now) {
      out.push_back(fmt::format(
          "--workers {} --threads {}{}: {:.1f} ms a batch predicted against {:.1f} ms with {} "
          "worker(s) and {} thread(s), from the loader and the step timed at start ({})",
          best.workers, best.threads, f.workers_given ? " (or leave --workers out: measured)" : "",
          1e3 * best.predicted_seconds, 1e3 * now, f.workers, f.threads, describe_costs(c)));
    } else {
      out.push_back(fmt::format(
          "more workers cannot help: {} worker(s) and {} thread(s) already make the fastest use "
          "of the {} core(s) as timed at start ({}); make each sample cheaper to load",
          f.workers, f.threads, c.cores, describe_costs(c)));
    }
  }
  if (f.packed && f.packed->packed_ms < (1.0 - kWorthIt) * f.packed->stored_ms) {
    const data::PackedDecode& p = *f.packed;
    std::string batch;
    if (load_seconds && f.costs) {
      PipelineCosts cheaper = *f.costs;
      cheaper.load_seconds = *load_seconds * p.packed_ms / p.stored_ms;
      const PipelineChoice now = choose_pipeline(*f.costs, PipelineLimits{});
      const PipelineChoice then = choose_pipeline(cheaper, PipelineLimits{});
      batch = fmt::format("; {:.1f} ms a batch predicted against {:.1f}",
                          1e3 * then.predicted_seconds, 1e3 * now.predicted_seconds);
    }
    out.push_back(fmt::format(
        "dl-train pack --max-side {} (then train on its shards): a file loads in {:.2f} ms "
        "against {:.2f} ms as stored ({:.1f}x; {:.0f} KiB against {:.0f}), measured on {} of "
        "your files{}",
        p.max_side, p.packed_ms, p.stored_ms, p.stored_ms / p.packed_ms, p.packed_kib, p.stored_kib,
        p.files, batch));
  }
}

void checkpoint_bound(const RunFigures& f, std::vector<std::string>& out) {
  if (f.checkpoint_writes == 0 || !(f.checkpoint_write_seconds > 0)) return;
  out.push_back(fmt::format(
      "{} checkpoint(s) inside the epochs took {:.2f} s each: --checkpoint-every {} keeps them "
      "near {:.0f}% of the time",
      f.checkpoint_writes, f.checkpoint_write_seconds,
      checkpoint_interval_for(f.checkpoint_write_seconds), 100.0 * kWorthIt));
}

void evaluation_bound(const RunFigures& f, std::vector<std::string>& out) {
  if (f.epochs == 0 || !(f.val_samples > 0)) return;
  const double per_epoch = f.time[Phase::kEval] / f.epochs;
  const double train_per_epoch = (f.time.total() - f.time[Phase::kEval]) / f.epochs;
  out.push_back(fmt::format(
      "validating {:.0f} samples took {:.1f} s an epoch against {:.1f} s of training: a smaller "
      "validation set (--val-fraction where the data has no validation split) or longer epochs "
      "shift the balance",
      f.val_samples, per_epoch, train_per_epoch));
}

}  // namespace

std::string checkpoint_interval_for(double write_seconds) {
  const double seconds = write_seconds / kWorthIt;
  const int minutes = std::max(1, static_cast<int>(std::ceil(seconds / 60.0)));
  return std::to_string(minutes) + "m";
}

std::vector<std::string> prescribe(const RunFigures& f, const Verdict& v) {
  std::vector<std::string> out;
  if (!(f.time.total() > 0)) return out;
  switch (v.bound) {
    case Phase::kData:
      data_bound(f, out);
      break;
    case Phase::kCheckpoint:
      checkpoint_bound(f, out);
      break;
    case Phase::kEval:
      evaluation_bound(f, out);
      break;
    default:
      break;
  }
  return out;
}

}  // namespace dl::train
