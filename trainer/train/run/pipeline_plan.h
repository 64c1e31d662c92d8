// How many loader workers and compute threads dl-train uses, chosen from measurement rather than
// from the core count alone. The rule of thumb (workers = cores - 2, the rest compute) assumes
// loading is the bottleneck; when a batch loads in a fraction of a training step the workers sit
// idle on cores that compute could use (on 2 cores the rule leaves one thread to compute and
// makes an epoch about 1.6x slower). dl-train times loading and training steps at start
// (pipeline_tuner.h) and this pure function turns those timings into the choice.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace dl::train {

struct PipelineCosts {
  int cores = 1;              // cores the process may use
  double load_seconds = 0.0;  // one batch loaded and transformed by one thread
  // Compute threads -> one training step on a loaded batch (host normalisation, upload, forward,
  // backward, optimizer step), for the thread counts that were measured.
  std::map<int, double> step_seconds;
};

// What the user fixed; -1 leaves it to the choice.
struct PipelineLimits {
  int workers = -1;
  int threads = -1;
};

struct PipelineChoice {
  int workers = 0;
  int threads = 1;
  double predicted_seconds = 0.0;  // per batch
};

// Loading with workers is planned 15% slower than measured alone: the workers then share caches
// and memory bandwidth with compute, and a loader only just as fast as the step makes the step
// wait whenever one batch is slower than the mean.
constexpr double kLoadHeadroom = 1.15;

// Seconds per batch with `workers` loader threads and `threads` compute threads: with no workers
// the training thread loads, so load + step; with workers loading overlaps the step and the slower
// of the two sets the pace (each worker loads one batch at a time). `threads` must be measured.
double predict_batch_seconds(const PipelineCosts& costs, int workers, int threads);

// The thread counts worth measuring on `cores` cores: all of them up to 4 cores, then a spread
// (cores, cores-1, cores-2, 3/4, 1/2, 1/4, 1), largest first.
std::vector<int> thread_candidates(int cores, const PipelineLimits& limits);

// The choice: among the configurations that do not oversubscribe the cores (workers + threads <=
// cores, or no workers) and use measured thread counts, those within 3% of the fastest prediction
// are equally good; of them the one with the fewest workers wins, so loading gets just enough
// threads to keep the step fed and compute gets the rest. Ties go to the faster prediction.
PipelineChoice choose_pipeline(const PipelineCosts& costs, const PipelineLimits& limits);

// What the prediction says will bound the run: "the loader" where loading takes the larger part
// of a batch's predicted time (done by the training thread without workers, or by the workers
// slower than the step), else "the steps".
std::string predicted_bound(const PipelineCosts& costs, int workers, int threads);

// The rule of thumb, for comparison in the log and the bench: max(1, cores - 2) workers and the
// remaining cores (at least 1) for compute.
PipelineChoice cores_minus_two(int cores);

// "loading 3.14 ms/batch; step 24.3 ms (2 threads), 41.0 ms (1 thread)"
std::string describe_costs(const PipelineCosts& costs);

}  // namespace dl::train
