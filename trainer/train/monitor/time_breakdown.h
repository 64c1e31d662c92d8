// Where a run's time goes: each epoch's wall time split into waiting for data, the copy to the
// device, forward and backward, the optimizer, waiting on the gradient exchange, checkpoint
// stalls, evaluation and the rest; and the verdict drawn from it ("data-bound: 41% of the time
// waiting for data"). Pure: dl-train's loop fills the seconds (trainer.cpp says how each is
// measured), this file shares them out, names the bound and lays out the table.
#pragma once

#include <array>
#include <cstddef>
#include <string>

namespace dl::train {

enum class Phase : int {
  kData,        // waiting for the loader's next batch
  kCopy,        // the batch to the device and into float (CPU: the conversion)
  kCompute,     // forward and backward (on a GPU: with the copy and the optimizer, see below)
  kOptimizer,   // unscale, clipping, the optimizer's and the scaler's step
  kExchange,    // several ranks: waiting for gradient buckets after backward
  kCheckpoint,  // training held for a checkpoint: the state's copy, a previous write, epoch ends
  kEval,        // the validation pass
  kOther,       // the rest of the epoch: logging, the loader's epoch start, the epoch's end
};
constexpr std::size_t kPhases = 8;

struct TimeBreakdown {
  std::array<double, kPhases> seconds{};

  double& operator[](Phase p) { return seconds[static_cast<std::size_t>(p)]; }
  double operator[](Phase p) const { return seconds[static_cast<std::size_t>(p)]; }
  double total() const;
  TimeBreakdown& operator+=(const TimeBreakdown& other);
};

// "data", "copy", ...: metrics.csv's time_<name>_s columns and TensorBoard's epoch/time_<name>.
const char* phase_name(Phase p);
// "waiting for data", "copying batches to the device", ...
const char* phase_label(Phase p);

// An overhead (data, copy, exchange, checkpoint, evaluation) taking at least this share of the
// time bounds the run; below it, the run is compute-bound.
constexpr double kBoundShare = 0.15;

struct Verdict {
  Phase bound = Phase::kCompute;  // kCompute: forward, backward and the optimizer dominate
  double percent = 0;             // the bound's share of the time
  std::string name;               // "data-bound", "compute-bound", ...
  std::string line;               // "data-bound: 41% of the time waiting for data"
};

// The largest overhead at or above kBoundShare, else compute (forward, backward, optimizer).
Verdict verdict(const TimeBreakdown& t);

// "data 41% | copy 2% | compute 50% | optimizer 3% | checkpoint 1% | eval 3%": the phases that
// took any time, in order.
std::string shares_line(const TimeBreakdown& t);

// The run's end: a row a phase that took time (data and compute always), then the total.
std::string breakdown_table(const TimeBreakdown& t);

}  // namespace dl::train
