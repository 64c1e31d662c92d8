// The processes that train together, and the questions the loop asks of them: does this process
// write (checkpoints, metrics.csv, train.log, the progress bar), what are the totals of all of
// them, and what does rank 0 hold. One process is rank 0 of 1 and needs no collectives; several
// share a process group (collectives.h).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "train/amp/train_step.h"
#include "train/dist/collectives.h"

namespace dl::train {

class World {
 public:
  World() = default;  // one process
  explicit World(std::shared_ptr<Collectives> group);

  int rank() const { return rank_; }
  int size() const { return size_; }
  Collectives* group() const { return group_.get(); }

  // Only one process writes the run's files, so that they never interleave.
  bool writes() const { return rank_ == 0; }

  // Makes `totals` the sum over every process.
  void reduce(BatchTotals& totals) const;
  std::int64_t sum(std::int64_t value) const;
  std::int64_t min(std::int64_t value) const;

  // Rank 0's values of `tensors` everywhere (parameters and buffers at the start, as DDP).
  void broadcast_from_first(const std::vector<at::Tensor>& tensors) const;
  // Rank 0's bytes everywhere (a checkpoint to resume from, read by rank 0 only).
  std::vector<char> broadcast_from_first(std::vector<char> bytes) const;

 private:
  std::shared_ptr<Collectives> group_;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace dl::train
