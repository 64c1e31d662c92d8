// Exact resume: a run stopped at any step (a stop signal, or kill -9 after a --checkpoint-every
// write) and resumed with --resume ends with the very weights, optimizer state and epoch metrics
// of a run that never stopped: bitwise on the CPU with one compute thread. Equal training loss and
// accuracy sums for the interrupted epoch mean no sample was taken twice or left out (a sample
// more or less changes the sum). Under another global batch the resumed run says what it repeats.
// The learning rate --lr-scaling derives from --reference-batch trains, and resumes, as that rate
// given outright.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "core/checkpoint_note.h"
#include "model/checkpoint.h"
#include "support/build_paths.h"
#include "support/data_sets.h"
#include "support/files.h"
#include "support/matchers.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace dl::test {
namespace {

const std::string kTrain = dl::test::kTrainBin;
constexpr std::chrono::seconds kRunTimeout{300};

// 2 epochs of 12 batches of 32 on a Fashion-MNIST subset, one thread, a progress line a batch.
class ExactResume : public ::testing::Test {
 protected:
  void SetUp() override {
    if (fashion_mnist_dir().empty()) GTEST_SKIP() << kNoFashion;
    write_fashion_subset(data_.path(), 1024, 256);
  }

  std::vector<std::string> argv(const std::string& name, std::vector<std::string> more) const {
    std::vector<std::string> a = {
        kTrain,   "--threads",   "1",          "--workers", "1", "--monitor-every",
        "0",      "--data",      data_.path(), "--epochs",  "2", "--limit-batches",
        batches_, "--log-every", "1",          "--name",    name};
    // Batches of 32 unless the test says otherwise.
    if (std::find(more.begin(), more.end(), "--batch-size") == more.end()) {
      a.insert(a.end(), {"--batch-size", "32"});
    }
    a.insert(a.end(), more.begin(), more.end());
    return in_directory(ws_.path(), a);
  }

  Result train(const std::string& name, std::vector<std::string> more) const {
    Process p(argv(name, std::move(more)));
    return p.wait(kRunTimeout);
  }

  // The uninterrupted run everything is compared with.
  void reference() {
    const Result r = train("ref", {"--checkpoint-every", "0"});
    ASSERT_EQ(r.code, 0) << show(r);
  }

  // Weights, AdamW's state, the step and both epochs' metrics of runs/<name> equal the
  // reference's exactly.
  void expect_same_as_reference(const std::string& name) const {
    const auto ref = model::load_checkpoint(ws_ / "runs/ref/last.pt");
    const auto got = model::load_checkpoint(ws_ / ("runs/" + name + "/last.pt"));
    EXPECT_EQ(got.epoch, 2);
    EXPECT_EQ(std::get<std::int64_t>(got.extra.at("global_step")), 2 * std::stoll(batches_));
    ASSERT_EQ(ref.model_state.size(), got.model_state.size());
    for (std::size_t i = 0; i < ref.model_state.size(); ++i) {
      EXPECT_TRUE(at::equal(ref.model_state[i].second, got.model_state[i].second))
          << ref.model_state[i].first << " differs";
    }
    ASSERT_EQ(ref.optimizer.state.size(), got.optimizer.state.size());
    for (const auto& [index, s] : ref.optimizer.state) {
      const auto& g = got.optimizer.state.at(index);
      EXPECT_EQ(s.step, g.step);
      EXPECT_TRUE(at::equal(s.exp_avg, g.exp_avg)) << "exp_avg of parameter " << index;
      EXPECT_TRUE(at::equal(s.exp_avg_sq, g.exp_avg_sq)) << "exp_avg_sq of parameter " << index;
    }
    const Csv a = read_csv(ws_ / "runs/ref/metrics.csv");
    const Csv b = read_csv(ws_ / ("runs/" + name + "/metrics.csv"));
    ASSERT_EQ(b.rows.size(), 2u) << read_file(ws_ / ("runs/" + name + "/metrics.csv"));
    for (std::size_t row = 0; row < 2; ++row) {
      for (const char* column : {"train_loss", "train_acc", "val_loss", "val_acc", "lr"}) {
        EXPECT_EQ(a.number(row, column), b.number(row, column))
            << column << " of epoch " << row + 1 << ": a sample taken twice or left out";
      }
    }
  }

  TempDir data_, ws_;
  std::string batches_ = "12";  // --limit-batches: steps an epoch
};

TEST_F(ExactResume, KilledAfterClockCheckpointsResumesAtTheNextSampleBitwise) {
  reference();
  // last.pt every 4 steps; kill -9 once step 4's write is reported, again once step 16's is, then
  // let the run finish.
  const std::vector<std::string> every = {"--checkpoint-every", "4"};
  int resumed_inside = 0;
  for (const std::string step : {"4", "16"}) {
    std::vector<std::string> more = every;
    if (step != "4") more.emplace_back("--resume");
    Process p(argv("k", more));
    ASSERT_TRUE(wait_for_output(p, "at step " + step + " (", kRunTimeout)) << p.out();
    p.send_signal(SIGKILL);
    const Result killed = p.wait(kRunTimeout);
    ASSERT_EQ(killed.signal, SIGKILL) << show(killed);
    if (contains(killed.out, "inside epoch")) ++resumed_inside;
  }
  std::vector<std::string> more = every;
  more.emplace_back("--resume");
  const Result last = train("k", more);
  ASSERT_EQ(last.code, 0) << show(last);
  EXPECT_EQ(resumed_inside, 1) << "the second start resumed inside epoch 1";
  EXPECT_TRUE(std::regex_search(last.out, std::regex(R"(inside epoch 2 at step (16|20) )")))
      << show(last);
  expect_same_as_reference("k");
}

// As bench/kill_bench.sh does against checkpoint files: kill -9 at random moments, six times,
// each restart with --resume from whatever last.pt there is (every 3 steps, or an epoch's end),
// then a run to the end. Each kill may land in a step, in a background write, in validation or
// in the start-up: the end is the uninterrupted run's, bitwise, whatever the moments were.
TEST_F(ExactResume, KilledAtRandomMomentsManyTimesEndsBitwise) {
  batches_ = "30";  // about a second of training a start
  reference();
  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int> delay_ms(0, 400);
  std::string moments;
  for (int kill = 0; kill < 6; ++kill) {
    // As a scheduler's restart does (deploy/vm/train.sh): --resume once there is a last.pt.
    std::vector<std::string> more = {"--checkpoint-every", "3"};
    if (file_exists(ws_ / "runs/r/last.pt")) more.emplace_back("--resume");
    Process p(argv("r", more));
    // Training under way (or resumed at the end of the epochs: nothing left to kill).
    if (!wait_for_output(p, "batch ", kRunTimeout)) break;
    const int ms = delay_ms(rng);
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    p.send_signal(SIGKILL);
    const Result killed = p.wait(kRunTimeout);
    moments += std::to_string(ms) + " ms" + (killed.signal == SIGKILL ? "; " : " (had ended); ");
  }
  std::cout << "kills after the first progress line: " << moments << "\n";
  // The same rule for the last start: on a loaded machine six kills may all land before the
  // first last.pt was written, and then there is nothing to resume (--resume would refuse).
  std::vector<std::string> more = {"--checkpoint-every", "3"};
  if (file_exists(ws_ / "runs/r/last.pt")) more.emplace_back("--resume");
  const Result last = train("r", more);
  ASSERT_EQ(last.code, 0) << show(last);
  expect_same_as_reference("r");
}

TEST_F(ExactResume, SigtermAtAStepSavesThePositionAndResumesBitwise) {
  reference();
  Process p(argv("s", {"--checkpoint-every", "0"}));
  ASSERT_TRUE(wait_for_output(p, " batch 5/12", kRunTimeout)) << p.out();
  p.send_signal(SIGTERM);
  const Result stopped = p.wait(kRunTimeout);
  ASSERT_EQ(stopped.code, 128 + SIGTERM) << show(stopped);
  const auto saved = model::load_checkpoint(ws_ / "runs/s/last.pt");
  const auto batches = std::get<std::int64_t>(saved.extra.at("position_batches"));
  EXPECT_GE(batches, 5);
  EXPECT_EQ(std::get<std::int64_t>(saved.extra.at("position_global_batch")), 32);
  EXPECT_TRUE(contains(stopped.out, "--resume goes on at the next batch")) << show(stopped);

  const Result resumed = train("s", {"--checkpoint-every", "0", "--resume"});
  ASSERT_EQ(resumed.code, 0) << show(resumed);
  EXPECT_TRUE(contains(resumed.out, "the epoch goes on at batch " + std::to_string(batches + 1)))
      << show(resumed);
  expect_same_as_reference("s");
}

TEST_F(ExactResume, AnotherGlobalBatchSaysWhatItTakesAgain) {
  Process p(argv("g", {"--checkpoint-every", "5"}));
  ASSERT_TRUE(wait_for_output(p, "at step 5 (", kRunTimeout)) << p.out();
  p.send_signal(SIGKILL);
  p.wait(kRunTimeout);
  const auto saved = model::load_checkpoint(ws_ / "runs/g/last.pt");
  const auto batches = std::get<std::int64_t>(saved.extra.at("position_batches"));
  // 32 x batches samples taken; batches of 48 from the last whole one before that position. A
  // resume keeps the checkpoint's global batch unless --global-batch gives another.
  const std::int64_t taken = 32 * batches;
  const Result r = train("g", {"--checkpoint-every", "0", "--resume", "--global-batch", "48"});
  ASSERT_EQ(r.code, 0) << show(r);
  // The batch is replaced, in a line; the learning rate (the same --lr) is kept.
  EXPECT_TRUE(
      contains(r.out, "--resume: --global-batch 48 replaces the checkpoint's global batch 32"))
      << show(r);
  EXPECT_TRUE(contains(r.out, "--resume keeps the checkpoint's learning rate")) << show(r);
  const std::string again = taken % 48 == 0
                                ? "no sample taken twice"
                                : std::to_string(taken % 48) + " of its samples taken again";
  EXPECT_TRUE(contains(r.out,
                       "written with a global batch of 32 and run now with 48: the epoch "
                       "goes on at batch " +
                           std::to_string(taken / 48 + 1) + ", " + again))
      << show(r);
}

// --lr 0.00025 tuned for a batch of 8, trained at 32 under --lr-scaling linear, is --lr 0.001:
// the same weights bitwise as the reference run, and the rate in the log and in last.json (which
// --resume keeps). Under --lr-scaling none a --reference-batch is not used, and the log says so.
TEST_F(ExactResume, TheReferenceBatchScalesTheLearningRateItTrainsAt) {
  reference();
  const Result one = train("s", {"--checkpoint-every", "0", "--lr", "0.00025", "--lr-scaling",
                                 "linear", "--reference-batch", "8"});
  ASSERT_EQ(one.code, 0) << show(one);
  EXPECT_TRUE(contains(one.out,
                       "lr 0.001: --lr 0.00025 x 4, --lr-scaling linear from "
                       "--reference-batch 8 to the batch 32"))
      << show(one);
  const auto note = parse_checkpoint_note(read_file(ws_ / "runs/s/last.json"));
  ASSERT_TRUE(note.has_value());
  EXPECT_EQ(note->base_lr, 0.001);
  expect_same_as_reference("s");

  const Result unused = train("u", {"--reference-batch", "8"});
  ASSERT_EQ(unused.code, 0) << show(unused);
  EXPECT_TRUE(contains(unused.out,
                       "--reference-batch 8 is not used: --lr-scaling none keeps "
                       "--lr 0.001"))
      << show(unused);
}

TEST_F(ExactResume, BadIntervalIsRefusedWith64NamingTheOption) {
  const Result r = train("bad", {"--checkpoint-every", "5x"});
  EXPECT_EQ(r.code, 64) << show(r);
  EXPECT_TRUE(contains(r.out,
                       "--checkpoint-every: '5x' is not an interval; expected a number of "
                       "steps (500), a time (30s, 10m, 2h) or 0"))
      << show(r);
  EXPECT_FALSE(file_exists(ws_ / "runs/bad")) << "a refused start wrote its run directory";
}

}  // namespace
}  // namespace dl::test
