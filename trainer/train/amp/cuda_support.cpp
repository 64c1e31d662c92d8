// CUDA-only queries, compiled in only where the CUDA headers are usable (DL_HAVE_C10_CUDA).
#include "train/amp/cuda_support.h"

#ifdef DL_HAVE_C10_CUDA
#include <c10/core/Device.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <cuda_runtime_api.h>
#endif

namespace dl::train::cuda {

#ifdef DL_HAVE_C10_CUDA

bool compiled() {
  return true;
}

int major_capability(int index) {
  int major = -1;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, index) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error state so later CUDA calls are not blamed
    return -1;
  }
  return major;
}

void empty_cache() {
  c10::cuda::CUDACachingAllocator::emptyCache();
}

// LibTorch 1.13 takes the device as int, 2.x as c10::DeviceIndex: a DeviceIndex converts to both.
// Index 0 of each StatArray is StatType::AGGREGATE in every version.
std::int64_t peak_allocated_bytes(int index) {
  const auto stats =
      c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(index));
  return static_cast<std::int64_t>(stats.allocated_bytes[0].peak);
}

void reset_peak(int index) {
  c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(index));
}

#else  // CPU-only LibTorch

bool compiled() {
  return false;
}

int major_capability(int /*index*/) {
  return -1;
}

void empty_cache() {}

std::int64_t peak_allocated_bytes(int /*index*/) {
  return -1;
}

void reset_peak(int /*index*/) {}

#endif

}  // namespace dl::train::cuda
