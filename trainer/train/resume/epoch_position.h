// Where a training run stands inside an epoch, as a checkpoint records it so that --resume
// continues at the next sample: the epoch in progress, the batches of it already taken, the
// global batch they were taken with, and the epoch's totals so far (summed over the ranks) so
// that the epoch's line and metrics.csv come out as if the run had never stopped. The sample
// order and each sample's augmentation are pure functions of (seed, epoch, sample), so the
// position is all a resumed run needs to take the very batches an uninterrupted run takes.
//
// A resume under another world size keeps the global order when the global batch is the same:
// DistributedSampler's strided split gives global step k the samples k*G .. (k+1)*G - 1 of the
// epoch's permutation whatever the world size. Under another global batch G' the run restarts at
// the last whole batch of G' before the position, repeating fewer than G' samples.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>

#include "data/skip_reason.h"

namespace dl::train {

// The checkpoint's "extra" dict (model::CheckpointData::extra).
using ExtraMap = std::map<std::string, std::variant<std::int64_t, double>>;

struct EpochPosition {
  std::int64_t epoch = 0;         // the epoch in progress, counted from 0
  std::int64_t batches = 0;       // its batches taken: the next one is `batches`
  std::int64_t global_batch = 0;  // samples per step over all ranks
  // The epoch's training totals so far, over all ranks.
  double loss_sum = 0;
  std::int64_t correct = 0;
  std::int64_t samples = 0;
  std::int64_t overflow_steps = 0;
  data::SkipCounts skipped{};
};

void put_position(ExtraMap& extra, const EpochPosition& position);
// nullopt when the checkpoint holds no position (written at an epoch end, or by an older
// dl-train); throws std::invalid_argument for a position that cannot be (negative, partial).
std::optional<EpochPosition> get_position(const ExtraMap& extra);

// Where a resumed run starts inside `position.epoch`, for the global batch it runs with now.
struct ResumeStart {
  std::int64_t first_batch = 0;
  bool exact = true;          // the next sample is the one an uninterrupted run would take
  std::int64_t repeated = 0;  // samples taken again (another global batch)
};
ResumeStart resume_start(const EpochPosition& position, std::int64_t global_batch_now);

}  // namespace dl::train
