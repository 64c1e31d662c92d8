// What a training step agrees on with the other processes of a distributed run. The step runner
// (train_step.h) calls it; the distributed implementation (distributed_step.h) reduces the
// gradients in buckets and exchanges one small vector of flags, so that every rank takes the same
// decision: retry the batch in smaller pieces after any rank ran out of memory, stop at the
// same step when any rank was asked to stop, and write a checkpoint after the same step (the
// epoch's totals are summed over the ranks for it).
#pragma once

#include <cstdint>

namespace dl::train {

struct StepAgreement {
  bool failed = false;      // some rank's forward or backward ran out of memory: retry the batch
  std::int64_t piece = 0;   // the smallest micro-batch size of any rank (0: whole batches)
  int stop_signal = 0;      // the largest stop signal any rank received (0: none)
  bool checkpoint = false;  // rank 0's --checkpoint-every is due after this step
};

class StepSync {
 public:
  virtual ~StepSync() = default;

  // Before each micro-batch's backward: whether it is the step's last, whose gradients (the
  // accumulated sum) are reduced while the backward runs. The others' are not (DDP's no_sync).
  virtual void before_backward(bool last_piece) = 0;

  // After the step's backward passes, or after this rank's own failed: the gradients averaged
  // over the ranks (or, after any failure, dropped), and the agreement. `piece` is this rank's
  // micro-batch size from now on (0: whole batches).
  virtual StepAgreement agree(bool failed, std::int64_t piece) = 0;
};

}  // namespace dl::train
