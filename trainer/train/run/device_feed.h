// Moving loader batches to the device. Images travel as uint8 and become normalised floats on
// the device (as timm's prefetcher does). With CUDA, batch buffers are pinned host memory and the
// copies do not block; a buffer goes back to the loader only once its copy has finished, which a
// CUDA event recorded after the copy tells.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <array>
#include <deque>
#include <map>
#include <memory>
#include <mutex>

#include "data/batch.h"
#include "data/buffer_pool.h"

namespace dl::train {

class DeviceFeed {
 public:
  // mean/std per channel on the 0..1 scale.
  DeviceFeed(c10::Device device, int channels, const std::array<float, 3>& mean,
             const std::array<float, 3>& std);
  ~DeviceFeed();
  DeviceFeed(const DeviceFeed&) = delete;
  DeviceFeed& operator=(const DeviceFeed&) = delete;

  // For LoaderConfig: pinned host memory on CUDA, unset (the loader's default) on the CPU.
  data::AllocateFn allocator();
  data::ReleaseFn releaser();

  // The batch as normalised float images [n, C, H, W] and int64 labels [n] on the device. Takes
  // the batch: its buffer returns to the loader once nothing reads it any more.
  void upload(data::Batch batch, at::Tensor* images, at::Tensor* labels);

 private:
  struct InFlight;
  void retire(bool wait_all);

  c10::Device device_;
  at::Tensor mean_, inv_std_;  // [1, C, 1, 1] on the device, on the 0..255 scale
  std::shared_ptr<std::mutex> pinned_mutex_;
  std::shared_ptr<std::map<void*, at::Tensor>> pinned_;  // blocks handed to the loader
  std::deque<std::unique_ptr<InFlight>> in_flight_;
};

}  // namespace dl::train
