// The largest batch that fits, found in few probes: two small probes fit memory(batch) = fixed +
// per_sample x batch, the fit predicts the largest batch under the budget, a probe verifies it,
// and failures step down. A pure function of a probe callback, so it is tested against synthetic
// memory curves with known answers.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace dl {

struct ProbeResult {
  std::int64_t batch = 0;
  bool out_of_memory = false;    // the probe ran out of memory (or cuDNN found no algorithm)
  std::uint64_t peak_bytes = 0;  // peak memory of the probe (valid when !out_of_memory)
  double step_seconds = 0;
  std::string error;  // a probe that failed for another reason
  // The probe's wall time where it was made before the search asked for it (a program's first
  // step probe, the handshake): the search's own clock would count it as 0.
  double earlier_seconds = 0;
};

struct SearchOptions {
  std::uint64_t budget_bytes = 0;
  std::int64_t max_batch = 0;  // the data set's size; 0 = unbounded
  std::int64_t multiple = 8;   // preferred granularity where the size allows
  int max_probes = 6;
  std::int64_t first = 8;  // the two fitting probes
  std::int64_t second = 32;
};

struct SearchResult {
  std::int64_t batch = 0;  // 0: nothing fits
  std::vector<ProbeResult> trials;
  std::string reason;
  double fixed_bytes = 0, per_sample_bytes = 0;  // the fitted line
};

using ProbeFn = std::function<ProbeResult(std::int64_t batch)>;

// How a trial went against the budget: "fits", "over budget", "out of memory" or "error: ...".
std::string trial_outcome(const ProbeResult& trial, std::uint64_t budget_bytes);

// Never calls `probe` more than options.max_probes times. A probe "fits" when it did not run out
// of memory and its peak is within the budget.
SearchResult search_batch(const ProbeFn& probe, const SearchOptions& options);

}  // namespace dl
