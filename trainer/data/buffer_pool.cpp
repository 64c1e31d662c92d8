// Batch memory pool (see buffer_pool.h).
#include "data/buffer_pool.h"

#include <new>

namespace dl::data {
namespace {

// A cache line: no false sharing between batches, and aligned loads for SIMD copies.
constexpr std::align_val_t kAlignment{64};

}  // namespace

void* default_allocate(std::size_t bytes) {
  return ::operator new(bytes, kAlignment);
}

void default_release(void* block) {
  ::operator delete(block, kAlignment);
}

BufferLease::~BufferLease() {
  if (block_ != nullptr) pool_->give_back(block_);
}

std::shared_ptr<BufferPool> BufferPool::create(std::size_t block_bytes, AllocateFn allocate,
                                               ReleaseFn release) {
  if (!allocate) allocate = default_allocate;
  if (!release) release = default_release;
  // Not make_shared: the constructor is private.
  return std::shared_ptr<BufferPool>(
      new BufferPool(block_bytes, std::move(allocate), std::move(release)));
}

BufferPool::BufferPool(std::size_t block_bytes, AllocateFn allocate, ReleaseFn release)
    : block_bytes_(block_bytes), allocate_(std::move(allocate)), release_(std::move(release)) {}

BufferPool::~BufferPool() {
  // Every lease holds a reference, so by now all blocks are back in free_.
  for (void* block : free_) release_(block);
}

BufferLease BufferPool::acquire() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!free_.empty()) {
      void* block = free_.back();
      free_.pop_back();
      return BufferLease(shared_from_this(), block);
    }
    ++allocated_;
    // Room for every block up front, so give_back (called from destructors) never allocates.
    free_.reserve(allocated_);
  }
  // Outside the lock: pinned allocations can take milliseconds.
  void* block = allocate_(block_bytes_);
  if (block == nullptr) {
    std::lock_guard<std::mutex> lock(mutex_);
    --allocated_;
    throw std::bad_alloc();
  }
  return BufferLease(shared_from_this(), block);
}

std::size_t BufferPool::allocated() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return allocated_;
}

void BufferPool::give_back(void* block) {
  std::lock_guard<std::mutex> lock(mutex_);
  free_.push_back(block);
}

}  // namespace dl::data
