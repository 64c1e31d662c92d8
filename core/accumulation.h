// --global-batch: the recipe's batch per optimizer step, kept whatever the hardware. Each rank
// takes an equal share and steps through it in micro-batches no larger than the batch that fits
// (searched or given), accumulating their gradients: the fewest micro-batches, then the most even
// ones. A pure function: dl-launch's plan and dl-train on its own split alike.
#pragma once

#include <cstdint>
#include <string>

namespace dl {

struct Accumulation {
  std::int64_t per_rank = 0;  // samples a rank takes per optimizer step (the loader's batch)
  std::int64_t micro = 0;     // the largest piece a rank runs at once
  std::int64_t steps = 1;     // micro-batches per optimizer step (1: no accumulation)
};

// The split of `global` samples over `world` ranks in pieces of at most `fits`. Throws
// std::invalid_argument, with the reason, when `global` is not a multiple of `world` (every rank
// takes an equal share, as DistributedSampler's batches do).
Accumulation split_global_batch(std::int64_t global, int world, std::int64_t fits);

// "256 per rank x 2 ranks, in 2 micro-batches of at most 128", "256 at once".
std::string describe(const Accumulation& a, int world);

}  // namespace dl
