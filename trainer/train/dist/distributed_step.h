// The distributed side of a training step (step_sync.h over gradient_buckets.h): the gradients
// averaged over the ranks, and one exchange of four numbers per step (did any rank fail, the
// smallest micro-batch, the largest stop signal, does rank 0 want a checkpoint), taken after the
// gradients so that it costs one small collective and never a second wait.
#pragma once

#include <functional>
#include <memory>

#include "train/amp/step_sync.h"
#include "train/dist/collectives.h"
#include "train/dist/gradient_buckets.h"

namespace dl::train {

class DistributedStep final : public StepSync {
 public:
  // `stop_signal` reads this rank's stop request (stop_signal.h); `wants_checkpoint` whether this
  // rank's clock says a checkpoint is due after the step being taken (rank 0's says, the
  // others' say no); `device` is where the collectives' tensors live (NCCL reduces CUDA tensors
  // only).
  DistributedStep(Collectives& group, std::vector<at::Tensor> params, BucketOptions options,
                  std::function<int()> stop_signal, std::function<bool()> wants_checkpoint,
                  c10::Device device);

  void before_backward(bool last_piece) override;
  StepAgreement agree(bool failed, std::int64_t piece) override;

  const GradientBuckets& buckets() const { return buckets_; }
  // Seconds spent in agree() in all: waiting for the buckets overlap did not hide, and the flags.
  double wait_seconds() const { return wait_seconds_; }

 private:
  Collectives& group_;
  GradientBuckets buckets_;
  std::function<int()> stop_signal_;
  std::function<bool()> wants_checkpoint_;
  c10::Device device_;
  double wait_seconds_ = 0;
};

}  // namespace dl::train
