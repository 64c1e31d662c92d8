// Remote shards held in memory while an epoch reads them: fetcher threads download the shards the
// epoch's order needs next (read-ahead of whole shards, WebDataset's access pattern), within a
// memory budget; a shard whose planned reads are all done stays until its room is needed, so a
// set that fits the budget is downloaded once. A shard asked for that is not there yet is fetched
// first, over the budget if it must be, so the readers never wait on each other.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "data/remote_store.h"

namespace dl::data {

// A shard's bytes: a memory file, closed when the last reader lets go of it.
struct ShardFile {
  int fd = -1;
  std::uint64_t size = 0;
  ShardFile(int f, std::uint64_t s) : fd(f), size(s) {}
  ~ShardFile();
  ShardFile(const ShardFile&) = delete;
  ShardFile& operator=(const ShardFile&) = delete;
};

// Downloads shard `index` (remote_store.h's fetch_object over its URL; a fake in the tests).
using FetchShard = std::function<RemoteObject(std::uint32_t index)>;

struct ShardCacheStats {
  std::int64_t fetches = 0;      // downloads done
  std::int64_t waits = 0;        // acquire() calls that found their shard missing
  std::uint64_t peak_bytes = 0;  // the most held (resident and being fetched) at once
};

class ShardCache {
 public:
  // `sizes`: each shard's bytes, as its listing found them (what the budget counts ahead of a
  // download). `fetchers` threads download; `budget_bytes` bounds what read-ahead holds.
  ShardCache(std::vector<std::uint64_t> sizes, FetchShard fetch, std::uint64_t budget_bytes,
             int fetchers);
  ~ShardCache();
  ShardCache(const ShardCache&) = delete;
  ShardCache& operator=(const ShardCache&) = delete;

  // The shards of an epoch's sample reads, one entry a sample, in the order they come: what the
  // read-ahead follows. Replaces the previous plan (an epoch abandoned midway).
  void plan(const std::vector<std::uint32_t>& reads);
  // Shard `index`'s bytes, waiting for them if they are not there. Throws the DataError its
  // download ended with (the next acquire tries again).
  std::shared_ptr<const ShardFile> acquire(std::uint32_t index);
  // One planned read of shard `index` is done.
  void release(std::uint32_t index);

  ShardCacheStats stats() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace dl::data
