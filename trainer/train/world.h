// The processes that train together, and the two questions the loop asks of them: does this
// process write (checkpoints, metrics.csv), and what are the totals of all of them. Training runs
// in one process today, rank 0 of 1: it writes, and its totals are the world's.
#pragma once

#include "train/train_step.h"

namespace dl::train {

struct World {
  int rank = 0;
  int size = 1;

  // Only one process writes the run's files, so that they never interleave.
  bool writes() const { return rank == 0; }

  // Makes `totals` the sum over every process. With one process they already are.
  void reduce(BatchTotals& totals) const { (void)totals; }
};

}  // namespace dl::train
