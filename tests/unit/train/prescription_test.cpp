// Prescriptions: each from a measurement, shown only where it promises at least 5%: what the wait
// cost, whether a core is left for the loader, packing at the load times measured on the user's
// files, the checkpoint interval from the writes' own durations; a compute-bound run's idle cores.
#include "train/monitor/prescription.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace dl::test {
namespace {

using ::testing::HasSubstr;
using train::Phase;

// A data-bound run's figures: 4 s of 10 waiting, on 2 cores.
train::RunFigures starved(int workers, int threads) {
  train::RunFigures f;
  f.time[Phase::kData] = 4;
  f.time[Phase::kCompute] = 6;
  f.workers = workers;
  f.threads = threads;
  f.cores = 2;
  return f;
}

TEST(Prescription, AStarvedLoaderSaysWhatTheWaitCostAndWhetherACoreIsLeft) {
  const train::RunFigures idle = starved(0, 1);
  const auto lines = train::prescribe(idle, train::verdict(idle.time));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0],
            "waiting for data took 4.00 s of 10.00 s: fed as fast as its steps ran, "
            "the run would take up to 40% less time");
  EXPECT_EQ(lines[1],
            "1 of the 2 core(s) are idle (0 worker(s), 1 thread(s)): --workers 1 gives "
            "the loader those cores");
  const train::RunFigures full = starved(0, 2);
  EXPECT_THAT(train::prescribe(full, train::verdict(full.time))[1],
              HasSubstr("the 2 core(s) are all in use (0 worker(s), 2 thread(s)): more workers "
                        "would take cores from the steps"));
}

TEST(Prescription, PackingIsPrescribedFromTheUsersFilesTimedBothWays) {
  train::RunFigures f = starved(0, 2);
  f.packed = data::PackedDecode{16, 256, 4.0, 1.0, 190.0, 20.0};
  auto lines = train::prescribe(f, train::verdict(f.time));
  ASSERT_EQ(lines.size(), 3u);
  // The whole command, from the --data given (a workspace's data/ when none was).
  f.data = "photos/train/";
  lines = train::prescribe(f, train::verdict(f.time));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[2],
            "dl-train pack --data photos/train --out photos/train-packed --max-side 256, then "
            "--data photos/train-packed: a file loads in 1.00 ms against 4.00 ms as stored (4.0x "
            "faster; 20 KiB against 190), measured on 16 of your files");
  f.data.clear();
  EXPECT_THAT(train::prescribe(f, train::verdict(f.time))[2],
              HasSubstr("dl-train pack --data data --out data-packed --max-side 256, then "));
  // Packing that would not be 5% faster is not prescribed.
  f.packed->packed_ms = 3.9;
  EXPECT_EQ(train::prescribe(f, train::verdict(f.time)).size(), 2u);
  // Cores unknown: only the wait's figure.
  f.packed.reset();
  f.cores = 0;
  EXPECT_EQ(train::prescribe(f, train::verdict(f.time)).size(), 1u);
}

TEST(Prescription, CheckpointsGetTheIntervalTheirWritesAllow) {
  train::RunFigures f;
  f.time[Phase::kCheckpoint] = 5;
  f.time[Phase::kCompute] = 5;
  f.checkpoint_writes = 8;
  f.checkpoint_write_seconds = 0.55;  // 11 s at 5%
  auto lines = train::prescribe(f, train::verdict(f.time));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "8 checkpoint(s) inside the epochs took 0.55 s each: --checkpoint-every "
            "11s keeps them near 5% of the time");
  EXPECT_EQ(train::checkpoint_interval_for(5.9), "118s");
  EXPECT_EQ(train::checkpoint_interval_for(6.0), "2m");
  EXPECT_EQ(train::checkpoint_interval_for(6.1), "3m");
  EXPECT_EQ(train::checkpoint_interval_for(0.001), "1s");
  // Held only by the epochs' ends: no interval to give, and the line says so (a new user's
  // trial met a checkpoint-bound verdict with nothing under it); epochs unknown: nothing.
  f.checkpoint_writes = 0;
  EXPECT_TRUE(train::prescribe(f, train::verdict(f.time)).empty());
  f.epochs = 2;
  lines = train::prescribe(f, train::verdict(f.time));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "the checkpoints are the epoch ends' saves (2.50 s an epoch), which no "
            "--checkpoint-every removes: longer epochs (more data, or a larger --limit-batches) "
            "shift the balance");
}

TEST(Prescription, EvaluationIsWeighedAgainstTheTrainingStepsAlone) {
  train::RunFigures f;
  f.time[Phase::kEval] = 6;
  f.time[Phase::kCompute] = 3;
  f.time[Phase::kCheckpoint] = 1;  // not training
  f.val_samples = 10000;
  f.epochs = 2;
  const auto lines = train::prescribe(f, train::verdict(f.time));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_THAT(lines[0], HasSubstr("validating 10000 samples took 3.00 s an epoch against 1.50 s "
                                  "of training steps"));
}

TEST(Prescription, AComputeBoundRunGetsTheIdleCoresAndNothingWhenAllAreInUse) {
  train::RunFigures f = starved(1, 1);
  f.time[Phase::kData] = 0.1;
  EXPECT_EQ(train::verdict(f.time).bound, Phase::kCompute);
  EXPECT_TRUE(train::prescribe(f, train::verdict(f.time)).empty());
  f.workers = 0;
  f.cores = 4;
  const auto lines = train::prescribe(f, train::verdict(f.time));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "3 of the 4 core(s) are idle (0 worker(s), 1 thread(s)): --threads 4 gives the "
            "steps those cores");
  // The start timed the step at 4 threads no faster than at 1: the idle cores are its answer.
  f.step_seconds = {{1, 0.2396}, {4, 0.4346}};
  const auto timed = train::prescribe(f, train::verdict(f.time));
  ASSERT_EQ(timed.size(), 1u);
  EXPECT_EQ(timed[0],
            "3 of the 4 core(s) are idle, but the start timed a step at 4 thread(s) (434.6 ms) "
            "no faster than at 1 (239.6 ms): more threads would not speed the steps up here");
  f.step_seconds = {{1, 0.2396}, {4, 0.0800}};  // timed faster: the cores are prescribed
  EXPECT_THAT(train::prescribe(f, train::verdict(f.time))[0], HasSubstr("--threads 4 gives"));
  f.cores = 0;  // unknown
  EXPECT_TRUE(train::prescribe(f, train::verdict(f.time)).empty());
}

}  // namespace
}  // namespace dl::test
