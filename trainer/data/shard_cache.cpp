// The remote shards' read-ahead and memory budget (see shard_cache.h).
#include "data/shard_cache.h"

#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "data/data_error.h"

namespace dl::data {

ShardFile::~ShardFile() {
  if (fd >= 0) close(fd);
}

struct ShardCache::State {
  enum class Phase { kAbsent, kFetching, kReady };
  struct Shard {
    Phase phase = Phase::kAbsent;
    std::shared_ptr<const ShardFile> file;
    std::int64_t remaining = 0;  // planned reads not yet released
    std::uint64_t last_use = 0;
    std::exception_ptr error;  // the last download's failure
    std::uint64_t failures = 0;
  };

  std::vector<std::uint64_t> sizes;
  FetchShard fetch;
  std::uint64_t budget = 0;
  mutable std::mutex mutex;
  std::condition_variable changed;
  std::vector<Shard> shards;
  std::vector<std::uint32_t> sequence;  // the plan's shards, each at its first read
  std::size_t cursor = 0;               // read-ahead has reached sequence[cursor]
  std::deque<std::uint32_t> demanded;   // acquired while absent: fetched first
  std::uint64_t held = 0;               // bytes resident or being fetched
  std::uint64_t tick = 0;
  bool stopping = false;
  ShardCacheStats stats;
  std::vector<std::thread> threads;

  // Frees done shards (no planned read left), least recently used first, until `need` more
  // bytes fit the budget or none is left to free.
  void make_room(std::uint64_t need) {
    while (held + need > budget) {
      std::size_t victim = shards.size();
      for (std::size_t i = 0; i < shards.size(); ++i) {
        const Shard& s = shards[i];
        if (s.phase == Phase::kReady && s.remaining <= 0 &&
            (victim == shards.size() || s.last_use < shards[victim].last_use)) {
          victim = i;
        }
      }
      if (victim == shards.size()) return;
      held -= shards[victim].file->size;
      shards[victim].file.reset();
      shards[victim].phase = Phase::kAbsent;
    }
  }

  // The next shard to download, or -1: a demanded one first, else read-ahead's next planned
  // shard where it fits the budget (or where nothing at all is held).
  std::int64_t next_job() {
    while (!demanded.empty()) {
      const std::uint32_t i = demanded.front();
      demanded.pop_front();
      if (shards[i].phase == Phase::kAbsent) {
        make_room(sizes[i]);
        return i;
      }
    }
    while (cursor < sequence.size()) {
      const std::uint32_t i = sequence[cursor];
      if (shards[i].phase != Phase::kAbsent || shards[i].remaining <= 0) {
        ++cursor;
        continue;
      }
      make_room(sizes[i]);
      if (held > 0 && held + sizes[i] > budget) return -1;
      ++cursor;
      return i;
    }
    return -1;
  }

  void run() {
    std::unique_lock<std::mutex> lock(mutex);
    while (true) {
      std::int64_t job = -1;
      changed.wait(lock, [&] { return stopping || (job = next_job()) >= 0; });
      if (stopping) return;
      const auto i = static_cast<std::uint32_t>(job);
      shards[i].phase = Phase::kFetching;
      held += sizes[i];
      stats.peak_bytes = std::max(stats.peak_bytes, held);
      lock.unlock();
      std::shared_ptr<const ShardFile> file;
      std::exception_ptr error;
      try {
        const RemoteObject object = fetch(i);
        file = std::make_shared<const ShardFile>(object.fd, object.size);
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      held -= sizes[i];
      Shard& s = shards[i];
      if (file) {
        held += file->size;
        stats.peak_bytes = std::max(stats.peak_bytes, held);
        ++stats.fetches;
        s.file = std::move(file);
        s.phase = Phase::kReady;
        s.error = nullptr;
      } else {
        s.phase = Phase::kAbsent;
        s.error = error;
        ++s.failures;
      }
      changed.notify_all();
    }
  }
};

ShardCache::ShardCache(std::vector<std::uint64_t> sizes, FetchShard fetch,
                       std::uint64_t budget_bytes, int fetchers)
    : state_(std::make_unique<State>()) {
  state_->shards.resize(sizes.size());
  state_->sizes = std::move(sizes);
  state_->fetch = std::move(fetch);
  state_->budget = budget_bytes;
  for (int t = 0; t < std::max(1, fetchers); ++t) {
    state_->threads.emplace_back([s = state_.get()] { s->run(); });
  }
}

ShardCache::~ShardCache() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->stopping = true;
  }
  state_->changed.notify_all();
  for (std::thread& t : state_->threads) t.join();
}

void ShardCache::plan(const std::vector<std::uint32_t>& reads) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  State& s = *state_;
  for (State::Shard& shard : s.shards) shard.remaining = 0;
  s.sequence.clear();
  s.cursor = 0;
  for (const std::uint32_t i : reads) {
    if (i >= s.shards.size()) continue;
    if (s.shards[i].remaining++ == 0) s.sequence.push_back(i);
  }
  s.changed.notify_all();
}

std::shared_ptr<const ShardFile> ShardCache::acquire(std::uint32_t index) {
  std::unique_lock<std::mutex> lock(state_->mutex);
  State& s = *state_;
  State::Shard& shard = s.shards.at(index);
  if (shard.phase != State::Phase::kReady) {
    ++s.stats.waits;
    // A failure before this call (a read-ahead's) is tried again; one after it is this call's.
    const std::uint64_t failures = shard.failures;
    if (shard.phase == State::Phase::kAbsent) {
      s.demanded.push_back(index);
      s.changed.notify_all();
    }
    s.changed.wait(lock, [&] {
      return shard.phase == State::Phase::kReady || shard.failures != failures || s.stopping;
    });
    if (shard.phase != State::Phase::kReady && shard.failures != failures) {
      std::rethrow_exception(shard.error);
    }
    if (s.stopping) throw DataError("shard cache stopped");
  }
  shard.last_use = ++s.tick;
  return shard.file;
}

void ShardCache::release(std::uint32_t index) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  State& s = *state_;
  if (index < s.shards.size() && s.shards[index].remaining > 0 &&
      --s.shards[index].remaining == 0) {
    s.changed.notify_all();  // its room may go to read-ahead now
  }
}

ShardCacheStats ShardCache::stats() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->stats;
}

}  // namespace dl::data
