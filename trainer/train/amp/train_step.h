// One training step and one evaluation batch, with everything precision and memory ask for: the
// forward under autocast (loss computed in fp32 on logits.float()), the batch in micro-batches
// with gradient accumulation, loss scaling with unscale-before-clip and skipped overflow steps,
// and on an out-of-memory: free, halve the micro-batch, log it once, retry the same batch.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <vector>

#include "model/model.h"
#include "train/amp/gpu_phase_clock.h"
#include "train/amp/grad_scaler.h"
#include "train/amp/micro_batch.h"
#include "train/amp/precision.h"
#include "train/amp/step_sync.h"

namespace torch::optim {
class Optimizer;
}

namespace dl::train {

// The forward pass as training and evaluation run it: the fault-injection hook, autocast for
// fp16/bf16, and the logits returned as float32 so softmax and the loss stay in fp32.
at::Tensor forward_logits(model::Model& net, const at::Tensor& images, Precision precision,
                          c10::Device device);

// Sums over samples of a batch, an epoch or a validation pass. The sums stay on the device, so
// adding a batch's does not wait for it; mean_loss and accuracy read them back.
struct BatchTotals {
  at::Tensor loss_sum;  // sum over samples of the per-sample loss: double, on the device
  at::Tensor correct;   // correctly classified samples: int64, on the device
  std::int64_t samples = 0;

  static BatchTotals zeros(c10::Device device);
  BatchTotals& operator+=(const BatchTotals& other);
  double mean_loss() const;  // 0 without samples
  double accuracy() const;   // 0 without samples
};

struct StepResult {
  BatchTotals totals;
  bool stepped = true;      // false: the scaler found inf/NaN gradients and skipped the step
  int stop_signal = 0;      // distributed: the stop signal the ranks agreed on after this step
  bool checkpoint = false;  // distributed: the ranks agreed to write a checkpoint after this step
  // Host seconds in unscale, clipping and the optimizer's step (set_timed; exact on the CPU, the
  // time to queue the work on a GPU).
  double optimizer_seconds = 0;
};

class StepRunner {
 public:
  // `params` are the optimizer's parameters (clipped together). clip_norm 0: no clipping.
  StepRunner(model::Model& net, torch::optim::Optimizer& optimizer, std::vector<at::Tensor> params,
             GradScaler& scaler, Precision precision, c10::Device device, double clip_norm,
             MicroBatching micro = MicroBatching());

  // One optimizer step on the batch. Throws UserError (69) when even single samples run out of
  // memory, or when the optimizer's own step does (its partial update cannot be retried).
  StepResult train(const at::Tensor& images, const at::Tensor& labels);

  // Loss and accuracy of a batch in evaluation (the caller sets eval mode and no-grad); the
  // logits too (n x classes, float32) when `logits` is not null.
  BatchTotals evaluate(const at::Tensor& images, const at::Tensor& labels,
                       at::Tensor* logits = nullptr);

  const MicroBatching& micro() const { return micro_; }

  // Distributed training: the gradients are averaged over the ranks, and every out-of-memory
  // decision is taken together (step_sync.h). Null (the default): one process.
  void set_sync(StepSync* sync) { sync_ = sync; }

  // Time the optimizer's part of each step (StepResult::optimizer_seconds): two clock reads.
  void set_timed(bool timed) { timed_ = timed; }

  // On a GPU: mark where the backward ends and the optimizer's step ends on `clock` (the caller
  // marks the step's start and copy). Null: not marked.
  void set_gpu_clock(GpuPhaseClock* clock) { gpu_clock_ = clock; }

 private:
  // The batch in micro-batches: the forward of each, and in training its backward, the
  // gradients accumulating so that the pieces' sum to the batch's.
  BatchTotals run_pieces(const at::Tensor& images, const at::Tensor& labels, bool training,
                         at::Tensor* logits_out = nullptr);
  void recover_from_oom(std::int64_t n, bool training);
  void drop_gradients();

  model::Model& net_;
  torch::optim::Optimizer& optimizer_;
  std::vector<at::Tensor> params_;
  GradScaler& scaler_;
  Precision precision_;
  c10::Device device_;
  double clip_norm_;
  MicroBatching micro_;
  StepSync* sync_ = nullptr;
  bool timed_ = false;
  GpuPhaseClock* gpu_clock_ = nullptr;
};

}  // namespace dl::train
