// The loader's threads and bookkeeping (see loader.h).
//
// Workers claim batch indices in order, but only within a window of workers * prefetch_per_worker
// batches past the one the consumer waits for; finished batches park in a ring slot of that window
// until next() takes them. So memory stays bounded, order is kept, and a slow batch delays only
// itself. An epoch change bumps a generation number: workers drop work of an old generation at the
// next sample boundary, which also makes destruction mid-epoch prompt.
#include "data/loader.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "data/epoch_order.h"
#include "data/resize.h"
#include "data/transform.h"

namespace dl::data {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kPollInterval{100};

void validate(const SampleSource& source, const LoaderConfig& c) {
  auto fail = [](const std::string& what) { throw std::invalid_argument("data loader: " + what); };
  if (c.batch_size < 1) fail("batch size must be at least 1");
  if (c.workers < 0) fail("workers must be 0 or more");
  if (c.prefetch_per_worker < 1) fail("prefetch per worker must be at least 1");
  if (c.transform.out.channels < 1 || c.transform.out.height < 1 || c.transform.out.width < 1) {
    fail("the output image shape must be positive in every dimension");
  }
  if (static_cast<bool>(c.allocate) != static_cast<bool>(c.release)) {
    fail("give both an allocate and a release function, or neither");
  }
  const int channels = source.native_shape().channels;
  if (!channels_convertible(channels, c.transform.out.channels)) {
    fail("cannot turn the " + std::to_string(channels) + "-channel images of " + source.describe() +
         " into " + std::to_string(c.transform.out.channels) + " channels");
  }
}

}  // namespace

struct Loader::Impl {
  // What an epoch needs, shared read-only with the workers working on it.
  struct Plan {
    int epoch = 0;
    std::uint64_t generation = 0;
    std::vector<std::int64_t> order;
    std::int64_t batches = 0;
  };
  struct Slot {
    bool ready = false;
    std::optional<Batch> batch;
    std::exception_ptr error;
  };

  Impl(const SampleSource& s, LoaderConfig c)
      : source(s),
        config(std::move(c)),
        sample_bytes(config.transform.out.bytes()),
        epoch_size(config.order ? static_cast<std::int64_t>(config.order(0).size()) : s.size()),
        window(static_cast<std::size_t>(std::max(1, config.workers * config.prefetch_per_worker))),
        pool(BufferPool::create(Batch::block_bytes(config.transform.out, config.batch_size),
                                config.allocate, config.release)),
        slots(window) {}

  std::int64_t batches_per_epoch() const {
    const std::int64_t size = epoch_size;
    const std::int64_t bs = config.batch_size;
    return config.drop_last ? size / bs : (size + bs - 1) / bs;
  }

  // Fills `batch` with batch b of `plan`. False when the plan went stale meanwhile.
  bool assemble(const Plan& plan, std::int64_t b, Batch& batch) const {
    const std::int64_t begin = b * config.batch_size;
    const std::int64_t end = std::min<std::int64_t>(begin + config.batch_size,
                                                    static_cast<std::int64_t>(plan.order.size()));
    std::int64_t n = 0;
    SkipCounts skipped{};
    // Seeding mt19937 costs microseconds, as much as copying an MNIST sample many times over, so
    // only augmentation reseeds per sample. Evaluation draws nothing from the stream; a source that
    // did would still be deterministic, as one thread assembles a batch from a per-batch seed.
    std::mt19937 rng(
        sample_seed(config.seed, plan.epoch, plan.order[static_cast<std::size_t>(begin)]));
    for (std::int64_t pos = begin; pos < end; ++pos) {
      if (generation.load(std::memory_order_relaxed) != plan.generation) return false;
      const std::int64_t index = plan.order[static_cast<std::size_t>(pos)];
      if (config.transform.train && pos != begin)
        rng.seed(sample_seed(config.seed, plan.epoch, index));
      // A failed sample's slot is reused by the next good one: good samples stay contiguous.
      if (source.load(index, config.transform, rng,
                      batch.images() + static_cast<std::size_t>(n) * sample_bytes)) {
        batch.labels()[n++] = source.label(index);
      } else {
        ++skipped[static_cast<std::size_t>(source.skip_reason(index))];
      }
    }
    batch.set_counts(n, skipped, b);
    if (config.finish) config.finish(batch);
    return true;
  }

  Batch new_batch() { return Batch(pool->acquire(), config.transform.out, config.batch_size); }

  bool can_claim() const {
    return current && next_claim < current->batches &&
           next_claim < next_deliver + static_cast<std::int64_t>(window);
  }

  void worker_loop() {
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      work_cv.wait(lock, [&] { return stop || can_claim(); });
      if (stop) return;
      const std::int64_t b = next_claim++;
      const std::shared_ptr<const Plan> mine = current;
      ++busy;
      lock.unlock();
      Slot slot;
      try {
        Batch batch = new_batch();
        if (assemble(*mine, b, batch)) slot.batch = std::move(batch);
      } catch (...) {
        slot.error = std::current_exception();
      }
      lock.lock();
      --busy;
      if (!stop && mine->generation == generation.load(std::memory_order_relaxed)) {
        slot.ready = true;
        slots[static_cast<std::size_t>(b) % window] = std::move(slot);
        ready_cv.notify_all();
      }
      // A stale slot dies here and its buffer returns to the pool.
      idle_cv.notify_all();
    }
  }

  void start_epoch(int epoch, std::int64_t first_batch) {
    if (first_batch < 0) throw std::invalid_argument("loader: the first batch cannot be negative");
    auto next_plan = std::make_shared<Plan>();
    next_plan->epoch = epoch;
    next_plan->order = config.order
                           ? config.order(epoch)
                           : epoch_order(source.size(), config.shuffle, config.seed, epoch);
    if (static_cast<std::int64_t>(next_plan->order.size()) != epoch_size) {
      throw std::invalid_argument("loader: epoch " + std::to_string(epoch) + " has " +
                                  std::to_string(next_plan->order.size()) + " samples, not " +
                                  std::to_string(epoch_size));
    }
    next_plan->batches = batches_per_epoch();
    const std::int64_t first = std::min(first_batch, next_plan->batches);
    {
      // The samples the epoch's batches take from `first` on (a dropped last batch's are never
      // loaded).
      const auto bs = static_cast<std::size_t>(config.batch_size);
      const auto taken = std::min<std::size_t>(next_plan->order.size(),
                                               static_cast<std::size_t>(next_plan->batches) * bs);
      const auto skipped = std::min<std::size_t>(taken, static_cast<std::size_t>(first) * bs);
      source.plan_reads(
          std::vector<std::int64_t>(next_plan->order.begin() + static_cast<std::ptrdiff_t>(skipped),
                                    next_plan->order.begin() + static_cast<std::ptrdiff_t>(taken)));
    }
    {
      std::unique_lock<std::mutex> lock(mutex);
      generation.fetch_add(1, std::memory_order_relaxed);
      current.reset();
      for (Slot& slot : slots) slot = Slot{};
      // Wait for stale batches to be abandoned, so their buffers are back before new work starts
      // (the pool then never grows because of an epoch change).
      idle_cv.wait(lock, [&] { return busy == 0; });
      next_plan->generation = generation.load(std::memory_order_relaxed);
      current = std::move(next_plan);
      next_claim = first;
      next_deliver = first;
    }
    waited = 0.0;
    epoch_skipped = 0;
    epoch_skip_counts = SkipCounts{};
    work_cv.notify_all();
  }

  std::optional<Batch> next() {
    const Clock::time_point start = Clock::now();
    std::optional<Batch> result = take();
    waited += std::chrono::duration<double>(Clock::now() - start).count();
    if (result) {
      epoch_skipped += result->skipped();
      add(epoch_skip_counts, result->skip_counts());
    }
    return result;
  }

  std::optional<Batch> take() {
    if (config.workers == 0) {
      if (!current) throw std::logic_error("data loader: next() before start_epoch()");
      if (next_deliver >= current->batches) return std::nullopt;
      Batch batch = new_batch();
      assemble(*current, next_deliver++, batch);
      return batch;
    }
    std::unique_lock<std::mutex> lock(mutex);
    if (!current) throw std::logic_error("data loader: next() before start_epoch()");
    if (next_deliver >= current->batches) return std::nullopt;
    Slot& slot = slots[static_cast<std::size_t>(next_deliver) % window];
    if (config.poll) {
      while (!ready_cv.wait_for(lock, kPollInterval, [&] { return slot.ready; })) {
        lock.unlock();
        config.poll();
        lock.lock();
      }
    } else {
      ready_cv.wait(lock, [&] { return slot.ready; });
    }
    Slot taken = std::move(slot);
    slot = Slot{};
    ++next_deliver;
    lock.unlock();
    work_cv.notify_one();  // the window moved: one more batch may be claimed
    if (taken.error) std::rethrow_exception(taken.error);
    return std::move(taken.batch);
  }

  void stop_workers() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stop = true;
      generation.fetch_add(1, std::memory_order_relaxed);  // abandon batches in progress
    }
    work_cv.notify_all();
    for (std::thread& t : threads) t.join();
  }

  const SampleSource& source;
  const LoaderConfig config;
  const std::size_t sample_bytes;
  const std::int64_t epoch_size;  // samples in every epoch's order
  const std::size_t window;
  std::shared_ptr<BufferPool> pool;

  std::mutex mutex;
  std::condition_variable work_cv;   // workers: a batch may be claimed, or stop
  std::condition_variable ready_cv;  // consumer: a slot became ready
  std::condition_variable idle_cv;   // start_epoch: a worker finished its batch
  std::vector<Slot> slots;
  std::shared_ptr<const Plan> current;  // null before the first epoch
  std::atomic<std::uint64_t> generation{0};
  std::int64_t next_claim = 0;
  std::int64_t next_deliver = 0;
  int busy = 0;
  bool stop = false;
  std::vector<std::thread> threads;

  // Consumer-thread only.
  double waited = 0.0;
  std::int64_t epoch_skipped = 0;
  SkipCounts epoch_skip_counts{};
};

Loader::Loader(const SampleSource& source, LoaderConfig config) {
  validate(source, config);
  impl_ = std::make_unique<Impl>(source, std::move(config));
  if (impl_->config.workers > 0) set_resize_threads(1);  // the workers are the parallelism
  impl_->threads.reserve(static_cast<std::size_t>(impl_->config.workers));
  try {
    for (int i = 0; i < impl_->config.workers; ++i) {
      impl_->threads.emplace_back([impl = impl_.get()] { impl->worker_loop(); });
    }
  } catch (...) {
    impl_->stop_workers();
    throw;
  }
}

Loader::~Loader() {
  impl_->stop_workers();
}

std::int64_t Loader::batches_per_epoch() const {
  return impl_->batches_per_epoch();
}
void Loader::start_epoch(int epoch, std::int64_t first_batch) {
  impl_->start_epoch(epoch, first_batch);
}
std::optional<Batch> Loader::next() {
  return impl_->next();
}
double Loader::wait_seconds() const {
  return impl_->waited;
}
std::int64_t Loader::skipped_in_epoch() const {
  return impl_->epoch_skipped;
}
const SkipCounts& Loader::skip_counts_in_epoch() const {
  return impl_->epoch_skip_counts;
}
std::size_t Loader::pool_buffers() const {
  return impl_->pool->allocated();
}
const LoaderConfig& Loader::config() const {
  return impl_->config;
}

}  // namespace dl::data
