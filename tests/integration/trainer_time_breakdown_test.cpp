// Where the time went, in real runs made slow on purpose for three reasons: a loader without
// workers decoding photo-sized JPEGs is data-bound, a ResNet writing last.pt after every step is
// checkpoint-bound, and the small CNN on small images with nothing in its way is compute-bound.
// Each says so in its verdict line and in metrics.csv's `bound`, and the phases add up to the
// epoch's time.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "support/build_paths.h"
#include "support/data_sets.h"
#include "support/files.h"
#include "support/matchers.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace dl::test {
namespace {

const std::string kTrain = dl::test::kTrainBin;
const std::string kMakeJpegSet = dl::test::kMakeJpegSet;  // "" without OpenCV
constexpr std::chrono::seconds kRunTimeout{300};

Result train(const TempDir& ws, const std::string& name, std::vector<std::string> args) {
  std::vector<std::string> argv = {kTrain, "--monitor-every", "0", "--epochs", "1", "--name", name};
  argv.insert(argv.end(), args.begin(), args.end());
  Process p(in_directory(ws.path(), argv));
  return p.wait(kRunTimeout);
}

// The run's verdict line, its epoch's `bound`, and the phases summing to epoch_seconds.
void expect_bound(const TempDir& ws, const std::string& name, const Result& r,
                  const std::string& bound) {
  ASSERT_EQ(r.code, 0) << show(r);
  EXPECT_TRUE(contains(r.out, "\n" + bound + ": ") || contains(r.out, "info " + bound + ": "))
      << show(r);
  EXPECT_TRUE(contains(r.out, "where the time went (this process):")) << show(r);
  const Csv csv = read_csv(ws / ("runs/" + name + "/metrics.csv"));
  ASSERT_EQ(csv.rows.size(), 1u);
  const auto& header = csv.header;
  const auto& row = csv.rows[0];
  double sum = 0;
  std::string got;
  for (std::size_t i = 0; i < header.size(); ++i) {
    if (header[i].rfind("time_", 0) == 0) sum += std::stod(row[i]);
    if (header[i] == "bound") got = row[i];
  }
  EXPECT_EQ(got, bound);
  const double seconds = csv.number(0, "epoch_seconds");
  EXPECT_NEAR(sum, seconds, 0.02 * seconds + 0.01) << "the phases add up to the epoch";
}

TEST(TrainerTimeBreakdown, AStarvedLoaderIsDataBound) {
  if (kMakeJpegSet.empty()) GTEST_SKIP() << "no make_jpeg_set: this build has no OpenCV";
  TempDir ws;
  Process make({kMakeJpegSet, "--out", ws / "photos", "--per-class", "12", "--sides", "800-1000"});
  ASSERT_EQ(make.wait(kRunTimeout).code, 0);
  // 800-1000 px JPEGs decoded in the training process for a CNN on 32 px crops. One compute
  // thread: loading and the steps then share the one thread alike, so a machine busy with other
  // work slows both (two threads' steps slowed 5x beside a CI run, and the run read as compute).
  const Result r = train(ws, "data",
                         {"--data", ws / "photos/train", "--image-size", "32", "--batch-size", "16",
                          "--workers", "0", "--threads", "1"});
  expect_bound(ws, "data", r, "data-bound");
}

TEST(TrainerTimeBreakdown, ACheckpointEveryStepIsCheckpointBound) {
  if (fashion_mnist_dir().empty()) GTEST_SKIP() << kNoFashion;
  TempDir ws;
  write_fashion_subset(ws / "data", 512, 128);
  // ResNet-18's last.pt (its weights and AdamW's two moments, about 130 MB) after every step.
  const Result r = train(ws, "ckpt",
                         {"--data", ws / "data", "--model", "resnet18", "--batch-size", "16",
                          "--limit-batches", "6", "--checkpoint-every", "1"});
  expect_bound(ws, "ckpt", r, "checkpoint-bound");
}

TEST(TrainerTimeBreakdown, NothingInTheWayIsComputeBound) {
  if (fashion_mnist_dir().empty()) GTEST_SKIP() << kNoFashion;
  TempDir ws;
  // 32 validation samples against 2048 trained: validation is under 1% of the epoch's work, so
  // even a first validation slowed fourfold by a busy machine stays under the 15% that would make
  // the run evaluation-bound (128 samples read 16% beside a CI run).
  write_fashion_subset(ws / "data", 2048, 32);
  const Result r = train(ws, "compute", {"--data", ws / "data", "--batch-size", "32"});
  expect_bound(ws, "compute", r, "compute-bound");
  // Timed apart, the copy and the optimizer have columns of their own; --time-breakdown false
  // leaves them in compute.
  const Csv on = read_csv(ws / "runs/compute/metrics.csv");
  EXPECT_GT(on.number(0, "time_optimizer_s"), 0);
  const Result off =
      train(ws, "off", {"--data", ws / "data", "--batch-size", "32", "--time-breakdown", "false"});
  expect_bound(ws, "off", off, "compute-bound");
  EXPECT_EQ(read_csv(ws / "runs/off/metrics.csv").number(0, "time_optimizer_s"), 0);
  // Started over with --overwrite, a run's metrics.csv holds its own epochs only.
  const Result again =
      train(ws, "off",
            {"--data", ws / "data", "--batch-size", "32", "--limit-batches", "4", "--overwrite"});
  ASSERT_EQ(again.code, 0) << show(again);
  EXPECT_EQ(read_csv(ws / "runs/off/metrics.csv").rows.size(), 1u);
}

}  // namespace
}  // namespace dl::test
