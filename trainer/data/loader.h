// The multi-worker prefetching loader: turns a SampleSource into batches of uint8 CHW images, in
// order, with a bounded number of batches prepared ahead by long-lived worker threads.
//
// Reproducibility: the epoch's order comes from (seed, epoch) (or the caller's `order`) and each
// sample's augmentation from (seed, epoch, sample index), so a seed gives byte-identical batches
// whatever the number of workers (0 included) and whichever process of a distributed run loads
// the sample, and a run can resume at any epoch.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "data/batch.h"
#include "data/buffer_pool.h"
#include "data/sample_source.h"

namespace dl::data {

struct LoaderConfig {
  int batch_size = 1;
  // Worker threads assembling whole batches; 0 assembles them in next(), on the caller's thread.
  int workers = 0;
  // Batches prepared ahead per worker; at most workers * prefetch_per_worker are in flight.
  int prefetch_per_worker = 2;
  bool shuffle = false;
  // The sample indices of each epoch, in order, when the caller decides them (a distributed
  // sampler's share of the data set); every epoch must have the same count. Empty: 0..size-1,
  // shuffled from (seed, epoch) when `shuffle`.
  std::function<std::vector<std::int64_t>(int epoch)> order;
  // Drop the last, short batch (the epoch then has size / batch_size batches).
  bool drop_last = false;
  std::uint64_t seed = 0;
  Transform transform;
  // Where batch memory comes from, e.g. cudaHostAlloc/cudaFreeHost for pinned memory. Both or
  // neither; the default is 64-byte-aligned operator new/delete. `release` may be called after the
  // loader is gone (when the last batch is destroyed).
  AllocateFn allocate;
  ReleaseFn release;
  // Called on the consumer's thread about every 100 ms while next() waits for a worker's batch
  // (a Python binding checks for Ctrl-C there). What it throws leaves next() at once; the epoch
  // stays where it was, so next() may be called again, or start_epoch().
  std::function<void()> poll;
  // Run on the thread that assembled a batch (a worker, or next() with 0 workers) once its
  // samples are in: a consumer's conversion of the batch, done in parallel (Batch::attach).
  std::function<void(Batch&)> finish;
};

class Loader {
 public:
  // `source` must outlive the loader. Starts the workers, which then wait for start_epoch().
  // Throws std::invalid_argument for an unusable configuration.
  Loader(const SampleSource& source, LoaderConfig config);
  // Stops the workers, mid-epoch too: each abandons its batch at the next sample boundary.
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  std::int64_t batches_per_epoch() const;
  // Begins epoch `epoch` (any order, any repetition), abandoning what is left of the current one.
  // `first_batch` > 0 starts it there, as if the batches before had been taken: a resumed run's
  // batches are the very ones an uninterrupted run gets (order and augmentation are pure
  // functions of the seed, the epoch and the sample), and the skipped ones are never loaded.
  // Past the epoch's end, the epoch has no batches left.
  void start_epoch(int epoch, std::int64_t first_batch = 0);
  // The epoch's next batch (index 0, 1, 2, ...), or nullopt once all were returned. Rethrows an
  // exception a sample's load threw (the epoch then goes on with the next batch).
  // next(), start_epoch() and the accessors below belong to one consumer thread.
  std::optional<Batch> next();

  // Seconds spent inside next() since start_epoch(): time the trainer waited for data (with
  // 0 workers, all the loading time).
  double wait_seconds() const;
  // Samples skipped (failed to load) in the batches returned since start_epoch().
  std::int64_t skipped_in_epoch() const;
  // skipped_in_epoch(), by reason.
  const SkipCounts& skip_counts_in_epoch() const;
  // Batch buffers allocated so far: stays flat from epoch to epoch once warmed up.
  std::size_t pool_buffers() const;
  const LoaderConfig& config() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dl::data
