// The time breakdown's shares, verdict and table (time_breakdown.h).
#include "train/monitor/time_breakdown.h"

#include <fmt/format.h>

namespace dl::train {
namespace {

constexpr Phase kAll[kPhases] = {Phase::kData,      Phase::kCopy,     Phase::kCompute,
                                 Phase::kOptimizer, Phase::kExchange, Phase::kCheckpoint,
                                 Phase::kEval,      Phase::kOther};

// The overheads a verdict may name, in the order ties are broken.
constexpr Phase kOverheads[] = {Phase::kData, Phase::kExchange, Phase::kCheckpoint, Phase::kCopy,
                                Phase::kEval};

const char* bound_name(Phase p) {
  switch (p) {
    case Phase::kData:
      return "data-bound";
    case Phase::kCopy:
      return "copy-bound";
    case Phase::kExchange:
      return "exchange-bound";
    case Phase::kCheckpoint:
      return "checkpoint-bound";
    case Phase::kEval:
      return "evaluation-bound";
    default:
      return "compute-bound";
  }
}

}  // namespace

double TimeBreakdown::total() const {
  double sum = 0;
  for (const double s : seconds) sum += s;
  return sum;
}

TimeBreakdown& TimeBreakdown::operator+=(const TimeBreakdown& other) {
  for (std::size_t i = 0; i < kPhases; ++i) seconds[i] += other.seconds[i];
  return *this;
}

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::kData:
      return "data";
    case Phase::kCopy:
      return "copy";
    case Phase::kCompute:
      return "compute";
    case Phase::kOptimizer:
      return "optimizer";
    case Phase::kExchange:
      return "exchange";
    case Phase::kCheckpoint:
      return "checkpoint";
    case Phase::kEval:
      return "eval";
    case Phase::kOther:
      return "other";
  }
  return "?";
}

const char* phase_label(Phase p) {
  switch (p) {
    case Phase::kData:
      return "waiting for data";
    case Phase::kCopy:
      return "copying batches to the device";
    case Phase::kCompute:
      return "in forward and backward";
    case Phase::kOptimizer:
      return "in the optimizer";
    case Phase::kExchange:
      return "waiting on the gradient exchange";
    case Phase::kCheckpoint:
      return "on checkpoints";
    case Phase::kEval:
      return "in validation";
    case Phase::kOther:
      return "elsewhere (logging, epoch ends)";
  }
  return "?";
}

Verdict verdict(const TimeBreakdown& t) {
  Verdict v;
  const double total = t.total();
  if (total <= 0) {
    v.name = "compute-bound";
    v.line = "no time measured";
    return v;
  }
  double best = 0;
  for (const Phase p : kOverheads) {
    if (t[p] / total >= kBoundShare && t[p] > best) {
      best = t[p];
      v.bound = p;
    }
  }
  v.name = bound_name(v.bound);
  if (v.bound != Phase::kCompute) {
    v.percent = 100.0 * t[v.bound] / total;
    v.line = fmt::format("{}: {:.0f}% of the time {}", v.name, v.percent, phase_label(v.bound));
    return v;
  }
  v.percent = 100.0 * (t[Phase::kCompute] + t[Phase::kOptimizer]) / total;
  v.line = fmt::format("{}: {:.0f}% of the time in forward, backward and the optimizer", v.name,
                       v.percent);
  return v;
}

std::string shares_line(const TimeBreakdown& t) {
  const double total = t.total();
  std::string out;
  for (const Phase p : kAll) {
    if (total <= 0 || t[p] <= 0) continue;
    if (!out.empty()) out += " | ";
    out += fmt::format("{} {:.0f}%", phase_name(p), 100.0 * t[p] / total);
  }
  return out;
}

std::string breakdown_table(const TimeBreakdown& t) {
  const double total = t.total();
  std::string out = fmt::format("  {:<12}{:>10}{:>8}\n", "phase", "seconds", "share");
  for (const Phase p : kAll) {
    // The phases that took time (the copy and the optimizer are not timed apart on a GPU or
    // under --time-breakdown false; a single process exchanges nothing).
    if (!(t[p] > 0) && p != Phase::kData && p != Phase::kCompute) continue;
    out += fmt::format("  {:<12}{:>10.2f}{:>7.1f}%  {}\n", phase_name(p), t[p],
                       total > 0 ? 100.0 * t[p] / total : 0.0, phase_label(p));
  }
  out += fmt::format("  {:<12}{:>10.2f}", "total", total);
  return out;
}

}  // namespace dl::train
