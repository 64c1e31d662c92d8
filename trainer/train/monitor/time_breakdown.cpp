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

// Each phase's names, in the enum's order: metrics.csv's and TensorBoard's, the verdict's
// ("compute-bound" for the phases that are not overheads) and the table's.
struct PhaseNames {
  const char* name;
  const char* bound;
  const char* label;
};
constexpr PhaseNames kNames[kPhases] = {
    {"data", "data-bound", "waiting for data"},
    {"copy", "copy-bound", "copying batches to the device"},
    {"compute", "compute-bound", "in forward and backward"},
    {"optimizer", "compute-bound", "in the optimizer"},
    {"exchange", "exchange-bound", "waiting on the gradient exchange"},
    {"checkpoint", "checkpoint-bound", "on checkpoints"},
    {"eval", "evaluation-bound", "in validation"},
    {"other", "compute-bound", "elsewhere (logging, epoch ends)"},
};

const PhaseNames& names(Phase p) {
  return kNames[static_cast<std::size_t>(p)];
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
  return names(p).name;
}

const char* phase_label(Phase p) {
  return names(p).label;
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
  v.name = names(v.bound).bound;
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
    // The phases that took time (the copy and the optimizer are not timed apart under
    // --time-breakdown false, nor on a GPU by a dl-train without CUDA events; a single process
    // exchanges nothing).
    if (!(t[p] > 0) && p != Phase::kData && p != Phase::kCompute) continue;
    out += fmt::format("  {:<12}{:>10.2f}{:>7.1f}%  {}\n", phase_name(p), t[p],
                       total > 0 ? 100.0 * t[p] / total : 0.0, phase_label(p));
  }
  out += fmt::format("  {:<12}{:>10.2f}", "total", total);
  return out;
}

}  // namespace dl::train
