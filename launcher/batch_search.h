// The batch that trains fastest among those that fit, found in few probes. First the largest that
// fits: two small probes fit memory(batch) = fixed + per_sample x batch, the fit predicts the
// largest batch under the budget, a probe verifies it, and failures step down. Then, from the
// samples per second every probe measured, the throughput curve's best region is refined with the
// probes left, and the largest batch within a few percent of the best rate wins (a GPU whose rate
// has saturated still gets its largest batch; a CPU, whose rate falls with the batch, a fast one).
// A pure function of a probe callback, so it is tested against synthetic curves with known
// answers.
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

// What the search optimises: samples per second (the largest batch within `rate_tolerance` of
// the best measured rate), or size alone (the largest batch that fits, however slow).
enum class BatchObjective { kFastest, kLargest };

const char* objective_name(BatchObjective objective);  // "fastest" | "largest"

struct SearchOptions {
  std::uint64_t budget_bytes = 0;
  std::int64_t max_batch = 0;  // the data set's size; 0 = unbounded
  std::int64_t multiple = 8;   // preferred granularity where the size allows
  int max_probes = 8;          // every probe, the throughput's included
  int memory_probes = 6;       // of them, at most this many look for the largest that fits
  std::int64_t first = 8;      // the two fitting probes
  std::int64_t second = 32;
  BatchObjective objective = BatchObjective::kFastest;
  // "Within a few percent of the best": wider than two runs of one probe disagree (the probe's
  // median step differs by about 2% run to run on a CPU, docs/batch-search.md).
  double rate_tolerance = 0.05;
  // The throughput curve is refined between probes further apart than this ratio.
  double refine_ratio = 1.5;
};

// Which probed batch an objective picks, and why.
struct BatchChoice {
  std::int64_t batch = 0;    // 0: nothing fits
  std::int64_t largest = 0;  // the largest batch that fits
  std::int64_t fastest = 0;  // the fitting probe with the best samples/s; 0: no rate measured
  double best_rate = 0;      // its samples/s
  std::string why;           // one line: the rates compared, or why size alone decided
};

struct SearchResult {
  std::int64_t batch = 0;  // 0: nothing fits (= choice.batch)
  std::vector<ProbeResult> trials;
  std::string reason;  // how the largest batch that fits was found (the memory line)
  double fixed_bytes = 0, per_sample_bytes = 0;  // the fitted line
  BatchChoice choice;
};

// A trial's samples per second (batch / step time); 0 when its step was not timed.
double samples_per_second(const ProbeResult& trial);

// The batch `objective` picks among `trials`: the largest that fits, or the largest that fits
// whose rate is within `tolerance` of the best measured (size alone where no rate was measured).
// Pure: the search's last step.
BatchChoice choose_batch(const std::vector<ProbeResult>& trials, std::uint64_t budget_bytes,
                         BatchObjective objective, double tolerance);

using ProbeFn = std::function<ProbeResult(std::int64_t batch)>;

// How a trial went against the budget: "fits", "over budget", "out of memory" or "error: ...".
std::string trial_outcome(const ProbeResult& trial, std::uint64_t budget_bytes);

// Never calls `probe` more than options.max_probes times (options.memory_probes of them before
// the largest batch that fits is known). A probe "fits" when it did not run out of memory and its
// peak is within the budget.
SearchResult search_batch(const ProbeFn& probe, const SearchOptions& options);

}  // namespace dl
