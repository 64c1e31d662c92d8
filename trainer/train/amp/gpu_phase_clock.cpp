// CUDA events at a step's phase boundaries (gpu_phase_clock.h). The CUDA runtime is called only
// where CMake found c10's CUDA headers (DL_HAVE_C10_CUDA); elsewhere the clock records nothing.
#include "train/amp/gpu_phase_clock.h"

#include <algorithm>
#include <array>
#include <deque>
#include <vector>

#ifdef DL_HAVE_C10_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#endif

namespace dl::train {

StepSplit split_step_seconds(double host_seconds, const GpuPhaseTimes& gpu) {
  StepSplit s;
  const double seconds = std::max(0.0, host_seconds);
  const double total = gpu.copy_ms + gpu.compute_ms + gpu.optimizer_ms;
  if (!(total > 0)) {
    s.compute = seconds;
    return s;
  }
  s.copy = seconds * gpu.copy_ms / total;
  s.optimizer = seconds * gpu.optimizer_ms / total;
  s.compute = std::max(0.0, seconds - s.copy - s.optimizer);
  return s;
}

#ifdef DL_HAVE_C10_CUDA

namespace {
constexpr std::size_t kMarks = 4;
// Steps whose events are still unread; past this many the oldest is waited for (the GPU is then
// that many steps behind the host, which the run's own reads at its log points never allow).
constexpr std::size_t kMaxPending = 64;
using Events = std::array<cudaEvent_t, kMarks>;
}  // namespace

struct GpuPhaseClock::Impl {
  c10::DeviceIndex device;
  struct Step {
    Events events;
    std::size_t marked = 0;
  };
  std::deque<Step> pending;  // oldest first; the back is the step in progress
  std::vector<Events> spare;
  GpuPhaseTimes done;

  Events events() {
    if (!spare.empty()) {
      Events e = spare.back();
      spare.pop_back();
      return e;
    }
    Events e{};
    // Timing enabled (cudaEventDefault); no blocking sync: the clock only queries and waits
    // once per epoch.
    for (cudaEvent_t& ev : e) cudaEventCreateWithFlags(&ev, cudaEventDefault);
    return e;
  }

  // The step in progress, left without its kOptimized (an exception, a skipped batch).
  void drop_unfinished() {
    if (pending.empty() || pending.back().marked == kMarks) return;
    spare.push_back(pending.back().events);
    pending.pop_back();
  }

  static float between(cudaEvent_t a, cudaEvent_t b) {
    float ms = 0;
    if (cudaEventElapsedTime(&ms, a, b) != cudaSuccess) {
      cudaGetLastError();  // not a sticky error: leave no trace for the next CUDA call
      return 0;
    }
    return std::max(0.0f, ms);
  }

  // Reads and recycles the steps at the front that the GPU has passed; `wait`: all of them,
  // waiting for the GPU.
  void harvest(bool wait) {
    while (!pending.empty()) {
      Step& s = pending.front();
      if (s.marked == kMarks) {
        cudaEvent_t last = s.events[kMarks - 1];
        if (wait || pending.size() > kMaxPending) {
          cudaEventSynchronize(last);
        } else if (cudaEventQuery(last) != cudaSuccess) {
          cudaGetLastError();  // cudaErrorNotReady: the GPU has not got there yet
          break;
        }
        done.copy_ms += between(s.events[0], s.events[1]);
        done.compute_ms += between(s.events[1], s.events[2]);
        done.optimizer_ms += between(s.events[2], s.events[3]);
        ++done.steps;
      }
      // A step left unfinished (none is in progress here: kStart and take() drop it first) is
      // not counted; its events are recorded again by a later step.
      spare.push_back(s.events);
      pending.pop_front();
    }
  }
};

GpuPhaseClock::GpuPhaseClock(int device_index) : impl_(std::make_unique<Impl>()) {
  impl_->device = static_cast<c10::DeviceIndex>(device_index);
}

GpuPhaseClock::~GpuPhaseClock() {
  const c10::cuda::CUDAGuard guard(impl_->device);
  for (auto& s : impl_->pending) impl_->spare.push_back(s.events);
  for (Events& e : impl_->spare) {
    for (cudaEvent_t ev : e) cudaEventDestroy(ev);
  }
}

bool GpuPhaseClock::available() {
  return true;
}

void GpuPhaseClock::mark(StepMark mark) {
  const auto k = static_cast<std::size_t>(mark);
  const c10::cuda::CUDAGuard guard(impl_->device);
  if (mark == StepMark::kStart) {
    impl_->drop_unfinished();
    impl_->harvest(/*wait=*/false);
    impl_->pending.push_back(Impl::Step{impl_->events(), 0});
  }
  if (impl_->pending.empty()) return;
  Impl::Step& s = impl_->pending.back();
  if (s.marked != k) return;  // out of order (a step begun without kStart): not timed
  cudaEventRecord(s.events[k], c10::cuda::getCurrentCUDAStream(impl_->device).stream());
  ++s.marked;
}

GpuPhaseTimes GpuPhaseClock::take() {
  const c10::cuda::CUDAGuard guard(impl_->device);
  impl_->drop_unfinished();
  impl_->harvest(/*wait=*/true);
  GpuPhaseTimes t = impl_->done;
  impl_->done = GpuPhaseTimes();
  return t;
}

#else  // CPU-only LibTorch

struct GpuPhaseClock::Impl {};

GpuPhaseClock::GpuPhaseClock(int /*device_index*/) {}
GpuPhaseClock::~GpuPhaseClock() = default;

bool GpuPhaseClock::available() {
  return false;
}

void GpuPhaseClock::mark(StepMark /*mark*/) {}

GpuPhaseTimes GpuPhaseClock::take() {
  return {};
}

#endif

}  // namespace dl::train
