// Fixed-size memory blocks for batches, reused instead of freed: after the first few batches the
// loader allocates nothing. The memory comes from a caller-supplied allocator, so the trainer can
// hand out CUDA-pinned host memory (cudaHostAlloc) and copy batches to the GPU asynchronously.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace dl::data {

using AllocateFn = std::function<void*(std::size_t bytes)>;
using ReleaseFn = std::function<void(void* block)>;

// 64-byte-aligned operator new / delete: the default when the caller supplies no allocator.
void* default_allocate(std::size_t bytes);
void default_release(void* block);

class BufferPool;

// One block on loan; going out of scope returns it to its pool. The lease keeps the pool alive, so
// a batch may outlive the loader that produced it.
class BufferLease {
 public:
  BufferLease() = default;
  BufferLease(std::shared_ptr<BufferPool> pool, void* block)
      : pool_(std::move(pool)), block_(block) {}
  BufferLease(BufferLease&& other) noexcept { swap(other); }
  BufferLease& operator=(BufferLease&& other) noexcept {
    BufferLease(std::move(other)).swap(*this);
    return *this;
  }
  BufferLease(const BufferLease&) = delete;
  BufferLease& operator=(const BufferLease&) = delete;
  ~BufferLease();

  void* get() const { return block_; }
  explicit operator bool() const { return block_ != nullptr; }

 private:
  void swap(BufferLease& other) noexcept {
    std::swap(pool_, other.pool_);
    std::swap(block_, other.block_);
  }
  std::shared_ptr<BufferPool> pool_;
  void* block_ = nullptr;
};

class BufferPool : public std::enable_shared_from_this<BufferPool> {
 public:
  // Owned through shared_ptr only (leases point back to it). Empty functions mean the defaults.
  static std::shared_ptr<BufferPool> create(std::size_t block_bytes, AllocateFn allocate = {},
                                            ReleaseFn release = {});
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A free block, or a new one when all are on loan. Throws std::bad_alloc when the allocator
  // returns null.
  BufferLease acquire();
  std::size_t block_bytes() const { return block_bytes_; }
  // Blocks allocated so far (on loan or free): how far the pool has grown.
  std::size_t allocated() const;

 private:
  BufferPool(std::size_t block_bytes, AllocateFn allocate, ReleaseFn release);
  friend class BufferLease;
  void give_back(void* block);

  const std::size_t block_bytes_;
  const AllocateFn allocate_;
  const ReleaseFn release_;
  mutable std::mutex mutex_;
  std::vector<void*> free_;
  std::size_t allocated_ = 0;
};

}  // namespace dl::data
