// A training step's agreement between ranks (distributed_step.h).
#include "train/dist/distributed_step.h"

#include <torch/types.h>

#include <chrono>
#include <limits>

namespace dl::train {

DistributedStep::DistributedStep(Collectives& group, std::vector<at::Tensor> params,
                                 BucketOptions options, std::function<int()> stop_signal,
                                 std::function<bool()> wants_checkpoint, c10::Device device)
    : group_(group),
      buckets_(group, std::move(params), options),
      stop_signal_(std::move(stop_signal)),
      wants_checkpoint_(std::move(wants_checkpoint)),
      device_(device) {}

void DistributedStep::before_backward(bool last_piece) {
  buckets_.arm(last_piece);
}

StepAgreement DistributedStep::agree(bool failed, std::int64_t piece) {
  const auto start = std::chrono::steady_clock::now();
  if (failed) {
    buckets_.abandon();
  } else {
    buckets_.finish();
  }
  // One MAX over [failed, signal, -piece, checkpoint]: the minimum piece is the maximum of its
  // negation. A whole batch (piece 0) must not win against a rank's smaller pieces.
  const std::int64_t whole = std::numeric_limits<std::int64_t>::max();
  const bool checkpoint = wants_checkpoint_ && wants_checkpoint_();
  const at::Tensor local =
      torch::tensor({static_cast<std::int64_t>(failed), static_cast<std::int64_t>(stop_signal_()),
                     -(piece > 0 ? piece : whole), static_cast<std::int64_t>(checkpoint)},
                    torch::kLong);
  const at::Tensor flags = local.to(device_);
  group_.max(flags);
  const at::Tensor agreed = flags.cpu();
  const auto* v = agreed.data_ptr<std::int64_t>();
  StepAgreement a;
  a.failed = v[0] != 0;
  a.stop_signal = static_cast<int>(v[1]);
  const std::int64_t smallest = -v[2];
  a.piece = smallest == whole ? 0 : smallest;
  a.checkpoint = v[3] != 0;
  wait_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return a;
}

}  // namespace dl::train
