// Host-to-device batch transfer.
#include "train/run/device_feed.h"

#include <c10/core/Event.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/types.h>

#include <thread>
#include <vector>

namespace dl::train {

struct DeviceFeed::InFlight {
  data::Batch batch;
  c10::Event done;
};

DeviceFeed::DeviceFeed(c10::Device device, int channels, const std::array<float, 3>& mean,
                       const std::array<float, 3>& std)
    : device_(device),
      pinned_mutex_(std::make_shared<std::mutex>()),
      pinned_(std::make_shared<std::map<void*, at::Tensor>>()) {
  std::vector<float> m, s;
  for (int c = 0; c < channels; ++c) {
    m.push_back(255.0f * mean[static_cast<std::size_t>(c)]);
    s.push_back(1.0f / (255.0f * std[static_cast<std::size_t>(c)]));
  }
  const auto opts = torch::TensorOptions().dtype(torch::kFloat);
  mean_ = torch::tensor(m, opts).view({1, channels, 1, 1}).to(device);
  inv_std_ = torch::tensor(s, opts).view({1, channels, 1, 1}).to(device);
}

DeviceFeed::~DeviceFeed() {
  retire(/*wait_all=*/true);
}

data::AllocateFn DeviceFeed::allocator() {
  if (!device_.is_cuda()) return {};
  // A pinned tensor owns each block: LibTorch's caching host allocator does the cudaHostAlloc,
  // and no CUDA header is needed here, so the CPU build compiles the same code.
  auto mutex = pinned_mutex_;
  auto blocks = pinned_;
  return [mutex, blocks](std::size_t bytes) -> void* {
    auto t = torch::empty({static_cast<std::int64_t>(bytes)},
                          torch::TensorOptions().dtype(torch::kUInt8).pinned_memory(true));
    std::lock_guard<std::mutex> lock(*mutex);
    void* p = t.data_ptr();
    (*blocks)[p] = std::move(t);
    return p;
  };
}

data::ReleaseFn DeviceFeed::releaser() {
  if (!device_.is_cuda()) return {};
  auto mutex = pinned_mutex_;
  auto blocks = pinned_;
  return [mutex, blocks](void* p) {
    std::lock_guard<std::mutex> lock(*mutex);
    blocks->erase(p);
  };
}

void DeviceFeed::retire(bool wait_all) {
  while (!in_flight_.empty()) {
    if (!in_flight_.front()->done.query()) {
      // Keep at most two copies in flight; the oldest is long finished in practice.
      if (!wait_all && in_flight_.size() <= 2) return;
      while (!in_flight_.front()->done.query()) std::this_thread::yield();
    }
    in_flight_.pop_front();
  }
}

void DeviceFeed::upload(data::Batch batch, at::Tensor* images, at::Tensor* labels) {
  const data::ImageShape s = batch.shape();
  const std::int64_t n = batch.n();
  auto bytes = torch::from_blob(batch.images(), {n, s.channels, s.height, s.width}, torch::kUInt8);
  auto y = torch::from_blob(batch.labels(), {n}, torch::kLong);
  if (!device_.is_cuda()) {
    // On the CPU .to() would alias the loader's buffer: the float conversion copies the images,
    // the labels are cloned, and the buffer can go back at once.
    *images = (bytes.to(torch::kFloat) - mean_) * inv_std_;
    *labels = y.clone();
    return;
  }
  *images = (bytes.to(device_, /*non_blocking=*/true).to(torch::kFloat) - mean_) * inv_std_;
  *labels = y.to(device_, /*non_blocking=*/true);
  const c10::impl::VirtualGuardImpl guard(device_.type());
  auto flight = std::make_unique<InFlight>(InFlight{std::move(batch), c10::Event(device_.type())});
  flight->done.record(guard.getStream(device_));
  in_flight_.push_back(std::move(flight));
  retire(/*wait_all=*/false);
}

}  // namespace dl::train
