// Out-of-memory during a training step: recognising one, freeing what it left behind, and a test
// hook that simulates one. The trainer's answer (smaller micro-batches with gradient accumulation)
// is in train_step.*.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <exception>

namespace dl::train {

// Whether `e` says memory ran out, so that the same work in smaller pieces may succeed:
// c10::OutOfMemoryError (LibTorch >= 1.13 throws it for CUDA allocations), or an error whose
// message says so: "out of memory" (CUDA, the simulated one), "can't allocate memory" (the CPU
// allocator), cuDNN or cuBLAS failing to get workspace or to find an algorithm for the size
// ("CUDNN_STATUS_NOT_SUPPORTED", "no valid convolution algorithm", "unable to find an engine",
// "*_STATUS_ALLOC_FAILED").
bool is_out_of_memory(const std::exception& e);

// Returns cached device memory after a failed step (the step's tensors are already gone with its
// stack frames): on CUDA the caching allocator's free blocks go back to the driver, so the retry
// does not fail on fragmentation. Nothing on the CPU.
void release_cached_memory(c10::Device device);

// TEST HOOK (fault injection), not a setting: when the environment has DL_FAULT_OOM_ABOVE=N
// (N >= 1), every model forward on more than N samples throws a simulated out-of-memory
// (c10::OutOfMemoryError, "simulated out of memory ..."), so the recovery path runs on any
// machine. Read once per process; unset, empty or invalid means off.
void maybe_inject_oom(std::int64_t samples);
std::int64_t injected_oom_limit();  // 0 when off

}  // namespace dl::train
