// What would make a run faster, for the bound its time breakdown found (time_breakdown.h), each
// line from a figure measured on this machine in this run: the time the wait took, the cores the
// loader and the steps use, the user's own files loaded as stored and as
// `dl-train pack --max-side` would store them (data/packed_decode.h), the checkpoint writes' own
// durations. A prescription whose measurement is missing, or that would not help, is not shown.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "data/packed_decode.h"
#include "train/monitor/time_breakdown.h"

namespace dl::train {

struct RunFigures {
  TimeBreakdown time;                        // the whole run's
  int workers = 0, threads = 1;              // the loader's workers and the compute threads
  int cores = 0;                             // usable by this process (0: unknown)
  std::map<int, double> step_seconds;        // the start's step timings by thread count, if any
  std::optional<data::PackedDecode> packed;  // the user's files as stored and packed
  std::string data;                          // --data as given (the pack command's source)
  int checkpoint_writes = 0;                 // --checkpoint-every writes inside epochs
  double checkpoint_write_seconds = 0;       // their mean duration
  double val_samples = 0;                    // validated each epoch
  int epochs = 0;                            // epochs timed
};

// A prescription is worth a line when it promises at least this much (5% faster, or 5% of the
// run's time saved).
constexpr double kWorthIt = 0.05;

// Lines for `v.bound`, most telling first; empty when nothing measured supports one.
std::vector<std::string> prescribe(const RunFigures& f, const Verdict& v);

// --checkpoint-every's value that keeps writes of `write_seconds` near kWorthIt of the time:
// seconds below two minutes ("11s"), else whole minutes ("3m").
std::string checkpoint_interval_for(double write_seconds);

}  // namespace dl::train
