// The batch memory pool: reuse, custom allocators, leases that outlive the pool's owner.
#include "data/buffer_pool.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>

namespace dl::test {
namespace {

using namespace dl::data;

TEST(BufferPool, ReusesReturnedBlocks) {
  auto pool = BufferPool::create(100);
  void* first = nullptr;
  {
    BufferLease a = pool->acquire();
    BufferLease b = pool->acquire();
    first = a.get();
    EXPECT_NE(a.get(), b.get());
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a.get()) % 64, 0u);
    EXPECT_EQ(pool->allocated(), 2u);
  }
  BufferLease c = pool->acquire();
  BufferLease d = pool->acquire();
  EXPECT_TRUE(c.get() == first || d.get() == first);
  EXPECT_EQ(pool->allocated(), 2u);
}

TEST(BufferPool, UsesTheCallersAllocatorAndReleasesEverything) {
  int allocations = 0;
  int releases = 0;
  {
    auto pool = BufferPool::create(
        64,
        [&](std::size_t bytes) {
          ++allocations;
          return std::malloc(bytes);
        },
        [&](void* p) {
          ++releases;
          std::free(p);
        });
    BufferLease kept = pool->acquire();
    { BufferLease other = pool->acquire(); }
    pool.reset();  // the lease still holds the pool
    BufferLease moved = std::move(kept);
    EXPECT_TRUE(moved);
    EXPECT_EQ(releases, 0);
  }
  EXPECT_EQ(allocations, 2);
  EXPECT_EQ(releases, 2);
}

}  // namespace
}  // namespace dl::test
