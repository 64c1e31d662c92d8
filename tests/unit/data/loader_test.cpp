// The loader: coverage of every sample once per epoch, drop_last, byte-identical batches for any
// worker count, epoch-dependent order, skipped samples, errors, shutdown mid-epoch, pool reuse.
#include "data/loader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <random>
#include <stdexcept>
#include <utility>
#include <vector>

#include "data/memory_source.h"
#include "unit/data/fake_source.h"

namespace dl::test {
namespace {

using namespace dl::data;

LoaderConfig config_for(int batch_size, int workers, bool shuffle = true) {
  LoaderConfig c;
  c.batch_size = batch_size;
  c.workers = workers;
  c.shuffle = shuffle;
  c.seed = 1234;
  c.transform.out = FakeSource::shape();
  return c;
}

// Sample indices of one epoch, batch by batch, checking each batch's index and labels.
std::vector<std::vector<std::int64_t>> epoch_indices(Loader& loader, int epoch) {
  loader.start_epoch(epoch);
  std::vector<std::vector<std::int64_t>> batches;
  while (auto batch = loader.next()) {
    EXPECT_EQ(batch->index(), static_cast<std::int64_t>(batches.size()));
    std::vector<std::int64_t> indices;
    for (std::int64_t i = 0; i < batch->n(); ++i) {
      const std::int64_t index =
          FakeSource::index_of(batch->images() + static_cast<std::size_t>(i) * 16);
      EXPECT_EQ(batch->labels()[i], index % 10);
      indices.push_back(index);
    }
    batches.push_back(indices);
  }
  EXPECT_FALSE(loader.next().has_value());  // stays at the end
  return batches;
}

// Everything a run sees: the bytes of every batch of two epochs.
std::vector<std::uint8_t> run_bytes(const SampleSource& source, LoaderConfig config) {
  Loader loader(source, std::move(config));
  std::vector<std::uint8_t> all;
  for (int epoch = 0; epoch < 2; ++epoch) {
    loader.start_epoch(epoch);
    while (auto batch = loader.next()) {
      all.insert(all.end(), batch->images(), batch->images() + batch->image_bytes());
      const auto* labels = reinterpret_cast<const std::uint8_t*>(batch->labels());
      all.insert(all.end(), labels, labels + batch->n() * 8);
    }
  }
  return all;
}

TEST(Loader, EverySampleOncePerEpochWithShuffle) {
  const FakeSource source(103);
  Loader loader(source, config_for(10, 2));
  EXPECT_EQ(loader.batches_per_epoch(), 11);
  const auto batches = epoch_indices(loader, 0);
  ASSERT_EQ(batches.size(), 11u);
  EXPECT_EQ(batches.back().size(), 3u);  // the short last batch
  std::vector<std::int64_t> all;
  for (const auto& b : batches) all.insert(all.end(), b.begin(), b.end());
  std::vector<std::int64_t> sorted = all;
  std::sort(sorted.begin(), sorted.end());
  for (std::int64_t i = 0; i < 103; ++i) ASSERT_EQ(sorted[static_cast<std::size_t>(i)], i);
  EXPECT_FALSE(std::is_sorted(all.begin(), all.end()));
}

TEST(Loader, WithoutShuffleTheOrderIsTheSourceOrder) {
  const FakeSource source(25);
  Loader loader(source, config_for(8, 0, false));
  const auto batches = epoch_indices(loader, 3);
  std::vector<std::int64_t> all;
  for (const auto& b : batches) all.insert(all.end(), b.begin(), b.end());
  ASSERT_EQ(all.size(), 25u);
  EXPECT_TRUE(std::is_sorted(all.begin(), all.end()));
}

TEST(Loader, DropLastDropsTheShortBatch) {
  const FakeSource source(103);
  LoaderConfig c = config_for(10, 3);
  c.drop_last = true;
  Loader loader(source, c);
  EXPECT_EQ(loader.batches_per_epoch(), 10);
  const auto batches = epoch_indices(loader, 0);
  ASSERT_EQ(batches.size(), 10u);
  for (const auto& b : batches) EXPECT_EQ(b.size(), 10u);
}

TEST(Loader, SameSeedSameBytesForAnyWorkerCount) {
  const FakeSource fake(77);
  const auto reference = run_bytes(fake, config_for(8, 0));
  EXPECT_EQ(run_bytes(fake, config_for(8, 1)), reference);
  EXPECT_EQ(run_bytes(fake, config_for(8, 3)), reference);

  // The real transform path too: RandomResizedCrop + flip over CIFAR-like samples.
  std::vector<std::uint8_t> pixels(40 * 3 * 16 * 16);
  std::mt19937 rng(1);
  for (auto& p : pixels) p = static_cast<std::uint8_t>(rng());
  std::vector<std::uint8_t> labels(40);
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::uint8_t>(i % 4);
  const MemorySource memory(pixels, labels, ImageShape{3, 16, 16}, 4, "memory");
  LoaderConfig c = config_for(6, 0);
  c.transform.out = ImageShape{3, 12, 12};
  c.transform.train = true;
  const auto augmented = run_bytes(memory, c);
  c.workers = 1;
  EXPECT_EQ(run_bytes(memory, c), augmented);
  c.workers = 3;
  c.prefetch_per_worker = 1;
  EXPECT_EQ(run_bytes(memory, c), augmented);
  c.seed = 99;
  EXPECT_NE(run_bytes(memory, c), augmented);
}

TEST(Loader, OrderChangesWithEpochAndRepeatsForTheSameEpoch) {
  const FakeSource source(50);
  Loader loader(source, config_for(50, 2));
  const auto epoch0 = epoch_indices(loader, 0);
  const auto epoch1 = epoch_indices(loader, 1);
  const auto epoch0_again = epoch_indices(loader, 0);
  EXPECT_NE(epoch0, epoch1);
  EXPECT_EQ(epoch0, epoch0_again);
}

TEST(Loader, FailedSamplesAreSkippedAndCounted) {
  const FakeSource source(30, {4, 5, 21});
  for (int workers : {0, 2}) {
    Loader loader(source, config_for(10, workers, false));
    const auto batches = epoch_indices(loader, 0);
    ASSERT_EQ(batches.size(), 3u);
    EXPECT_EQ(batches[0].size(), 8u);  // shorter, not refilled
    EXPECT_EQ(batches[1].size(), 10u);
    EXPECT_EQ(batches[2].size(), 9u);
    EXPECT_EQ(batches[0][4], 6);  // good samples stay contiguous
    EXPECT_EQ(loader.skipped_in_epoch(), 3);
    loader.start_epoch(1);
    EXPECT_EQ(loader.skipped_in_epoch(), 0);
  }
}

TEST(Loader, LoadExceptionsReachTheCaller) {
  FakeSource source(20);
  source.throw_at = 13;
  for (int workers : {0, 2}) {
    Loader loader(source, config_for(5, workers, false));
    loader.start_epoch(0);
    EXPECT_TRUE(loader.next().has_value());
    EXPECT_TRUE(loader.next().has_value());
    EXPECT_THROW(loader.next(), std::runtime_error);
    EXPECT_TRUE(loader.next().has_value());  // the epoch goes on
    EXPECT_FALSE(loader.next().has_value());
  }
}

TEST(Loader, DestroyedMidEpochWithoutHanging) {
  const FakeSource slow(10000, {}, std::chrono::microseconds(2000));
  const auto start = std::chrono::steady_clock::now();
  {
    Loader loader(slow, config_for(16, 3));
    loader.start_epoch(0);
    ASSERT_TRUE(loader.next().has_value());
  }
  {
    Loader loader(slow, config_for(16, 3));
    loader.start_epoch(0);  // destroyed before any batch was taken
  }
  { Loader never_started(slow, config_for(16, 2)); }
  // Each worker drops its batch at the next sample: far less than finishing 6 batches of 16.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_LT(slow.loads.load(), 300);
}

TEST(Loader, RestartingAnEpochMidwayGivesTheWholeEpoch) {
  const FakeSource source(40, {}, std::chrono::microseconds(200));
  Loader loader(source, config_for(4, 3));
  const auto full = epoch_indices(loader, 2);
  loader.start_epoch(5);
  ASSERT_TRUE(loader.next().has_value());
  EXPECT_EQ(epoch_indices(loader, 2), full);
}

// A resumed run: an epoch started at batch k gives batches k.. of the uninterrupted epoch, byte
// for byte with augmentation, for any worker count; past the end, no batch.
TEST(Loader, AnEpochStartedAtBatchKGivesTheRestOfTheSameEpoch) {
  std::vector<std::uint8_t> pixels(50 * 3 * 16 * 16);
  std::mt19937 rng(7);
  for (auto& p : pixels) p = static_cast<std::uint8_t>(rng());
  std::vector<std::uint8_t> labels(50);
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::uint8_t>(i % 5);
  const MemorySource memory(pixels, labels, ImageShape{3, 16, 16}, 5, "memory");
  auto batches_from = [&](int workers, std::int64_t first) {
    LoaderConfig c = config_for(6, workers);
    c.transform.out = ImageShape{3, 12, 12};
    c.transform.train = true;
    Loader loader(memory, c);
    loader.start_epoch(3, first);
    std::vector<std::pair<std::int64_t, std::vector<std::uint8_t>>> out;
    while (auto batch = loader.next()) {
      out.emplace_back(
          batch->index(),
          std::vector<std::uint8_t>(batch->images(), batch->images() + batch->image_bytes()));
    }
    return out;
  };
  const auto whole = batches_from(0, 0);
  ASSERT_EQ(whole.size(), 9u);
  for (const int workers : {0, 2}) {
    const auto rest = batches_from(workers, 4);
    ASSERT_EQ(rest.size(), 5u) << workers << " workers";
    for (std::size_t i = 0; i < rest.size(); ++i) {
      EXPECT_EQ(rest[i].first, static_cast<std::int64_t>(4 + i));
      EXPECT_EQ(rest[i].second, whole[4 + i].second) << "batch " << 4 + i;
    }
    EXPECT_TRUE(batches_from(workers, 9).empty());
    EXPECT_TRUE(batches_from(workers, 100).empty());
  }
}

TEST(Loader, BuffersAreReusedAcrossEpochs) {
  const FakeSource source(200);
  LoaderConfig c = config_for(8, 2);
  c.prefetch_per_worker = 2;
  std::atomic<int> allocations{0};  // workers allocate concurrently
  c.allocate = [&allocations](std::size_t bytes) {
    ++allocations;
    return std::malloc(bytes);
  };
  c.release = [](void* p) { std::free(p); };
  Loader loader(source, c);
  // The bound: the prefetch window (2 workers x 2) plus the one batch the caller holds while the
  // workers fill the window behind it. How close an epoch comes to it depends on timing.
  const std::size_t bound = 4 + 1;
  for (int epoch = 0; epoch < 6; ++epoch) {
    epoch_indices(loader, epoch);
    EXPECT_LE(loader.pool_buffers(), bound) << "epoch " << epoch;
  }
  // 150 batches went through at most 5 buffers: each allocated once, then reused.
  EXPECT_EQ(static_cast<std::size_t>(allocations.load()), loader.pool_buffers());

  Loader synchronous(source, config_for(8, 0));
  for (int epoch = 0; epoch < 3; ++epoch) epoch_indices(synchronous, epoch);
  EXPECT_EQ(synchronous.pool_buffers(), 1u);
}

TEST(Loader, BatchesOutliveTheLoader) {
  const FakeSource source(10);
  std::optional<Batch> kept;
  {
    Loader loader(source, config_for(4, 2, false));
    loader.start_epoch(0);
    kept = loader.next();
  }
  ASSERT_TRUE(kept.has_value());
  EXPECT_EQ(kept->n(), 4);
  EXPECT_EQ(FakeSource::index_of(kept->images() + 16 * 3), 3);
}

TEST(Loader, WaitTimeIsMeasuredPerEpoch) {
  const FakeSource slow(20, {}, std::chrono::microseconds(1000));
  Loader loader(slow, config_for(5, 0));
  loader.start_epoch(0);
  while (loader.next()) {
  }
  EXPECT_GT(loader.wait_seconds(), 0.015);  // 20 loads of 1 ms on the caller's thread
  loader.start_epoch(1);
  EXPECT_EQ(loader.wait_seconds(), 0.0);
}

TEST(Loader, RejectsBadConfigurationsAndEarlyNext) {
  const FakeSource source(10);
  EXPECT_THROW(Loader(source, config_for(0, 1)), std::invalid_argument);
  EXPECT_THROW(Loader(source, config_for(4, -1)), std::invalid_argument);
  LoaderConfig half = config_for(4, 1);
  half.allocate = [](std::size_t bytes) { return std::malloc(bytes); };
  EXPECT_THROW(Loader(source, half), std::invalid_argument);
  LoaderConfig channels = config_for(4, 1);
  channels.transform.out.channels = 2;
  EXPECT_THROW(Loader(source, channels), std::invalid_argument);
  Loader loader(source, config_for(4, 1));
  EXPECT_THROW(loader.next(), std::logic_error);
}

}  // namespace
}  // namespace dl::test
