// How many DataLoader workers a program's loader needs: loader probes at a few worker counts, a
// coarse pass over 0..max then finer steps where the answer can still move, and the fewest
// workers within a few percent of the best rate measured, or that feed the training step with
// some to spare where its rate is known (more workers cost memory, /dev/shm, start-up time and,
// on a small machine, the step's own cores, for nothing past that point). A pure function of a
// probe callback, so it is tested against synthetic rate curves with known answers.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace dl {

struct WorkerTrial {
  int workers = 0;
  double samples_per_second = 0;
  std::uint64_t host_bytes = 0;  // the loader's host memory, its workers' included
  std::string error;             // the probe failed: the search stops on it
};

struct WorkerSearchOptions {
  int max_workers = 0;  // the largest count tried (the usable cores, or fewer)
  int max_probes = 5;   // probes at most
  // The answer's rate is within this share of the best measured: small, because measurements
  // are noisy (a few percent) and the two errors add up.
  double tolerance = 0.02;
  // The samples/s the training step takes (its batch over its step time, from a step probe);
  // 0: not known. Known, the bar is at most this with kFeedHeadroom to spare: workers past what
  // the step consumes only take cores from it.
  double consumer_rate = 0;
};

constexpr double kFeedHeadroom = 1.15;

struct WorkerSearchResult {
  int workers = 0;
  std::vector<WorkerTrial> trials;    // in the order measured
  std::string reason;                 // "measured: 0 -> 610, 1 -> 1180, 2 -> 1800 samples/s; ..."
  const WorkerTrial* failed() const;  // the trial that failed, or null
};

using WorkerProbeFn = std::function<WorkerTrial(int workers)>;

// Calls `probe` at most options.max_probes times, never twice for one count; stops at the first
// trial with an error (result.failed()).
WorkerSearchResult search_workers(const WorkerProbeFn& probe, const WorkerSearchOptions& options);

// "0 -> 610, 2 -> 1800 samples/s", in order of the worker count.
std::string worker_trials_text(const std::vector<WorkerTrial>& trials);

}  // namespace dl
