// dl-train's memory probe (`--probe-batch N`): a few complete training steps at batch N on
// synthetic data of the real input shape, with the configured model, device and precision, then
// one line of JSON on stdout with the peak memory. dl-launch's batch-size search runs it in a child
// process per trial, so an out-of-memory trial never poisons the process that trains.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "train/run/config.h"

namespace dl::train {

// What one probe found; printed as {"batch":N,"fits":...,"out_of_memory":...,"peak_bytes":...,
// "step_seconds":...,"timed_steps":...,"device":"cpu","precision":"fp32","error":""}.
struct ProbeReport {
  std::int64_t batch = 0;
  bool out_of_memory = false;
  std::uint64_t peak_bytes = 0;  // CUDA: the caching allocator's peak reserved; CPU: VmHWM
  double step_seconds = 0;       // median of the timed steps (core/step_timing.h)
  int timed_steps = 0;           // how many were timed
  std::string device;            // "cpu", "cuda:0"
  std::string precision;         // what the steps really ran in
  std::string error;             // a failure other than running out of memory
  // Ran to the end: no out-of-memory, no error. Whether the peak fits a budget is the caller's
  // question, not the probe's.
  bool fits() const { return !out_of_memory && error.empty(); }
};

// The one JSON line (without the newline).
std::string probe_json(const ProbeReport& report);

// The `probe-batch` setting from the command line or the DL_* environment; nullopt when it is not
// set. Throws UserError (64) for a value that is not a whole number >= 1.
std::optional<std::int64_t> probe_batch_setting(int argc, const char* const argv[]);

// Runs the probe and prints its JSON line on stdout. Returns 0 whether the batch fits or not;
// throws UserError for bad input (data not found, unknown model, device not available).
int run_probe(const TrainConfig& config, std::int64_t batch);

}  // namespace dl::train
