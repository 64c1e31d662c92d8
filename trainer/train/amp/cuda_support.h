// What only a CUDA build of LibTorch offers, behind functions that the CPU-only build compiles
// too: a device's compute capability and the caching allocator (empty it, read its peak). The
// CUDA-only headers (c10/cuda/...) are used only where CMake found that they compile and link
// (DL_HAVE_C10_CUDA, see trainer/CMakeLists.txt); elsewhere these report "unknown" and do nothing.
#pragma once

#include <cstdint>

namespace dl::train::cuda {

// Whether this dl-train was built with c10's CUDA headers.
bool compiled();

// The major compute capability of CUDA device `index` (8 for an A100, 7 for a V100); -1 when
// unknown (no CUDA support compiled in, or the query failed).
int major_capability(int index);

// Returns the caching allocator's free blocks to the driver, so that memory freed by an aborted
// step is available again in one piece. Nothing without CUDA support.
void empty_cache();

// The most bytes held by tensors on device `index` since the last reset_peak; -1 when unknown.
std::int64_t peak_allocated_bytes(int index);
void reset_peak(int index);

}  // namespace dl::train::cuda
