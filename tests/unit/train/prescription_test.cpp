// Prescriptions: each from a measurement, shown only where it promises at least 5%: the workers
// the start's timing would choose, packing at the measured load times, the checkpoint interval
// from the writes' own durations; nothing for a compute-bound run.
#include "train/monitor/prescription.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace dl::test {
namespace {

using ::testing::HasSubstr;
using train::Phase;

// A data-bound run's figures: 4 s of 10 waiting, 2 cores timed at start (a batch loads in 50 ms
// on one thread; a step takes 50 ms on 2 threads, 80 ms on 1).
train::RunFigures starved(int workers, int threads) {
  train::RunFigures f;
  f.time[Phase::kData] = 4;
  f.time[Phase::kCompute] = 6;
  f.workers = workers;
  f.threads = threads;
  f.workers_given = true;
  train::PipelineCosts c;
  c.cores = 2;
  c.load_seconds = 0.05;
  c.step_seconds = {{2, 0.05}, {1, 0.08}};
  f.costs = c;
  return f;
}

TEST(Prescription, AStarvedLoaderGetsTheWorkersTheStartsTimingChooses) {
  const train::RunFigures f = starved(0, 2);
  const auto lines = train::prescribe(f, train::verdict(f.time));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_THAT(lines[0], HasSubstr("waiting for data took 4 s of 10:"));
  EXPECT_THAT(lines[0], HasSubstr("up to 40% less time"));
  // 0 workers: load + step = 100 ms; 1 worker + 1 thread: max(57.5, 80) = 80 ms.
  EXPECT_THAT(lines[1], HasSubstr("--workers 1 --threads 1 (or leave --workers out: measured): "
                                  "80.0 ms a batch predicted against 100.0 ms with 0 worker(s)"));
}

TEST(Prescription, SaturatedCoresSayMoreWorkersCannotHelp) {
  const train::RunFigures f = starved(1, 1);
  const auto lines = train::prescribe(f, train::verdict(f.time));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_THAT(lines[1], HasSubstr("more workers cannot help: 1 worker(s) and 1 thread(s)"));
}

TEST(Prescription, PackingIsPrescribedFromTheUsersFilesTimedBothWays) {
  train::RunFigures f = starved(1, 1);
  f.packed = data::PackedDecode{16, 256, 4.0, 1.0, 190.0, 20.0};
  auto lines = train::prescribe(f, train::verdict(f.time));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_THAT(lines[2], HasSubstr("dl-train pack --max-side 256 (then train on its shards): a "
                                  "file loads in 1.00 ms against 4.00 ms as stored (4.0x; 20 KiB "
                                  "against 190), measured on 16 of your files"));
  // Loading 4x cheaper: 12.5 ms a batch on one thread, so 2 threads and no worker: 62.5 ms
  // against the 80 ms the start's timing allows now.
  EXPECT_THAT(lines[2], HasSubstr("; 62.5 ms a batch predicted against 80.0"));
  // Packing that would not be 5% faster is not prescribed.
  f.packed->packed_ms = 3.9;
  lines = train::prescribe(f, train::verdict(f.time));
  EXPECT_EQ(lines.size(), 2u);
  // Without the start's timing (--workers and --threads both given) only the wait's figure.
  f.costs.reset();
  f.packed.reset();
  EXPECT_EQ(train::prescribe(f, train::verdict(f.time)).size(), 1u);
}

TEST(Prescription, CheckpointsGetTheIntervalTheirWritesAllow) {
  train::RunFigures f;
  f.time[Phase::kCheckpoint] = 5;
  f.time[Phase::kCompute] = 5;
  f.checkpoint_writes = 8;
  f.checkpoint_write_seconds = 0.9;  // 18 s at 5%: one minute
  auto lines = train::prescribe(f, train::verdict(f.time));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "8 checkpoint(s) inside the epochs took 0.90 s each: --checkpoint-every 1m "
            "keeps them near 5% of the time");
  EXPECT_EQ(train::checkpoint_interval_for(6.0), "2m");
  EXPECT_EQ(train::checkpoint_interval_for(6.1), "3m");
  // Held only by the epochs' ends: no interval to give.
  f.checkpoint_writes = 0;
  EXPECT_TRUE(train::prescribe(f, train::verdict(f.time)).empty());
}

TEST(Prescription, AComputeBoundRunGetsNone) {
  train::RunFigures f = starved(1, 1);
  f.time[Phase::kData] = 0.1;
  EXPECT_EQ(train::verdict(f.time).bound, Phase::kCompute);
  EXPECT_TRUE(train::prescribe(f, train::verdict(f.time)).empty());
}

}  // namespace
}  // namespace dl::test
