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
      "waiting for data took {:.2f} s of {:.2f} s: fed as fast as its steps ran, the run would "
      "take up to {:.0f}% less time",
      waited, total, 100.0 * waited / total));
  // Counted, not predicted: whether a core is left for more workers. (The start's timing model
  // is not used to promise a worker count here: under load its step timings swing too far, and
  // a prescription it made was measured slower once applied.)
  if (f.cores > 0) {
    const int used = f.workers + f.threads;
    if (used < f.cores) {
      out.push_back(fmt::format(
          "{} of the {} core(s) are idle ({} worker(s), {} thread(s)): --workers {} gives the "
          "loader those cores",
          f.cores - used, f.cores, f.workers, f.threads, f.workers + f.cores - used));
    } else {
      out.push_back(fmt::format(
          "the {} core(s) are all in use ({} worker(s), {} thread(s)): more workers would take "
          "cores from the steps; make each sample cheaper to load",
          f.cores, f.workers, f.threads));
    }
  }
  if (f.packed && f.packed->packed_ms < (1.0 - kWorthIt) * f.packed->stored_ms) {
    const data::PackedDecode& p = *f.packed;
    // The whole command: the source as given ("": the workspace's data/), and a local shards
    // folder named after it.
    std::string source = f.data.empty() ? std::string("data") : f.data;
    while (source.size() > 1 && source.back() == '/') source.pop_back();
    const std::string shards =
        source.find("://") == std::string::npos ? source + "-packed" : std::string("shards");
    out.push_back(fmt::format(
        "dl-train pack --data {} --out {} --max-side {}, then --data {}: a file loads in {:.2f} "
        "ms against {:.2f} ms as stored ({:.1f}x faster; {:.0f} KiB against {:.0f}), measured on "
        "{} of your files",
        source, shards, p.max_side, shards, p.packed_ms, p.stored_ms, p.stored_ms / p.packed_ms,
        p.packed_kib, p.stored_kib, p.files));
  }
}

// Counted like the loader's cores: a compute-bound run that leaves cores idle gets them for its
// steps (intra-op threads), which is what a smaller --threads than the cores costs. Unless the
// start timed the step at that many threads and found it no faster: then the idle cores are the
// measured answer, not a mistake (a new user's trial applied --threads 2 against the start's
// 435 ms at 2 threads and 240 ms at 1, and ran 2.2x slower).
void compute_bound(const RunFigures& f, std::vector<std::string>& out) {
  if (f.cores <= 0) return;
  const int idle = f.cores - f.workers - f.threads;
  if (idle <= 0) return;
  const auto now = f.step_seconds.find(f.threads);
  const auto more = f.step_seconds.find(f.threads + idle);
  if (now != f.step_seconds.end() && more != f.step_seconds.end() &&
      more->second > (1.0 - kWorthIt) * now->second) {
    out.push_back(fmt::format(
        "{} of the {} core(s) are idle, but the start timed a step at {} thread(s) ({:.1f} ms) no "
        "faster than at {} ({:.1f} ms): more threads would not speed the steps up here",
        idle, f.cores, more->first, 1e3 * more->second, now->first, 1e3 * now->second));
    return;
  }
  out.push_back(fmt::format(
      "{} of the {} core(s) are idle ({} worker(s), {} thread(s)): --threads {} gives the steps "
      "those cores",
      idle, f.cores, f.workers, f.threads, f.threads + idle));
}

void checkpoint_bound(const RunFigures& f, std::vector<std::string>& out) {
  if (f.checkpoint_writes == 0 || !(f.checkpoint_write_seconds > 0)) {
    // Only the epoch ends' saves (last.pt, best.pt): no interval removes them.
    if (f.epochs > 0) {
      out.push_back(fmt::format(
          "the checkpoints are the epoch ends' saves ({:.2f} s an epoch), which no "
          "--checkpoint-every removes: longer epochs (more data, or a larger --limit-batches) "
          "shift the balance",
          f.time[Phase::kCheckpoint] / f.epochs));
    }
    return;
  }
  out.push_back(fmt::format(
      "{} checkpoint(s) inside the epochs took {:.2f} s each: --checkpoint-every {} keeps them "
      "near {:.0f}% of the time",
      f.checkpoint_writes, f.checkpoint_write_seconds,
      checkpoint_interval_for(f.checkpoint_write_seconds), 100.0 * kWorthIt));
}

void evaluation_bound(const RunFigures& f, std::vector<std::string>& out) {
  if (f.epochs == 0 || !(f.val_samples > 0)) return;
  const double per_epoch = f.time[Phase::kEval] / f.epochs;
  const TimeBreakdown& t = f.time;
  const double steps = t[Phase::kData] + t[Phase::kCopy] + t[Phase::kCompute] +
                       t[Phase::kOptimizer] + t[Phase::kExchange];
  out.push_back(fmt::format(
      "validating {:.0f} samples took {:.2f} s an epoch against {:.2f} s of training steps: a "
      "smaller validation set, or more training per epoch, shifts the balance",
      f.val_samples, per_epoch, steps / f.epochs));
}

}  // namespace

std::string checkpoint_interval_for(double write_seconds) {
  const double seconds = std::max(1.0, std::ceil(write_seconds / kWorthIt));
  if (seconds < 120) return std::to_string(static_cast<int>(seconds)) + "s";
  return std::to_string(static_cast<int>(std::ceil(seconds / 60.0))) + "m";
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
    case Phase::kCompute:
      compute_bound(f, out);
      break;
    default:
      break;
  }
  return out;
}

}  // namespace dl::train
