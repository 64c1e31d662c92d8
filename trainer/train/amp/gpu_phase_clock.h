// A training step's copy, forward-backward and optimizer timed where they run: on a GPU the host's
// clock sees only the time to queue each phase's work, so CUDA events are recorded on the device's
// current stream at each phase's start and end. Reading them adds no synchronisation to the step:
// a step's events are read once the GPU has passed them (queried, never waited for, at the next
// step's start), and waited for only at the epoch's end, where the run reads its totals back
// anyway. Without CUDA support compiled in (cuda_support.h), available() is false and nothing is
// recorded.
#pragma once

#include <memory>

namespace dl::train {

// The marks of one step, in the order they are made.
enum class StepMark {
  kStart,         // before the batch's copy to the device
  kCopied,        // the batch is on the device, in float: forward and backward start
  kBackwardDone,  // the gradients are complete: unscale, clipping and the optimizer start
  kOptimized,     // the optimizer's (and the scaler's) step is queued
};

// The GPU's milliseconds in each phase, summed over the steps whose four marks it has passed.
struct GpuPhaseTimes {
  double copy_ms = 0;
  double compute_ms = 0;
  double optimizer_ms = 0;
  int steps = 0;
};

class GpuPhaseClock {
 public:
  // Marks the current stream of CUDA device `device_index`.
  explicit GpuPhaseClock(int device_index);
  ~GpuPhaseClock();
  GpuPhaseClock(const GpuPhaseClock&) = delete;
  GpuPhaseClock& operator=(const GpuPhaseClock&) = delete;

  // Whether this dl-train can record CUDA events (a CUDA build of LibTorch).
  static bool available();

  // Records `mark` for the step in progress; kStart begins a new step (a step left without its
  // kOptimized, by an exception or a skipped batch, is dropped).
  void mark(StepMark mark);

  // The phases of the steps completed since the last take(): waits for the GPU to reach the last
  // mark made, so it belongs at the epoch's end.
  GpuPhaseTimes take();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The host's seconds in the steps, split as the GPU spent its time: the copy and the optimizer get
// their shares of `host_seconds`, compute the rest. The stream's timeline, not the sum of the
// GPU's shares, is what the epoch's time is made of, so the host's total is kept and only divided.
// No GPU time measured: everything is compute.
struct StepSplit {
  double copy = 0;
  double compute = 0;
  double optimizer = 0;
};
StepSplit split_step_seconds(double host_seconds, const GpuPhaseTimes& gpu);

}  // namespace dl::train
