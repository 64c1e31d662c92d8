// Distributed dl-train, several real processes on loopback over Gloo, started with torchrun's
// variables as dl-launch, torchrun or a scheduler would set them (labels "integration;slow"):
// 2 ranks x batch 32 end with the parameters of 1 rank x batch 64 over the same samples; 3 ranks
// on a training set whose size 3 does not divide end where one process with the triple batch
// does, and their sharded validation reports the accuracy one process measures on the whole set;
// a checkpoint resumes under another number of ranks; a stop signal sent to one rank stops both at
// the same step and rank 0 saves. Every rank uses 1 thread and no loader worker: 2 cores.
#include <ATen/ATen.h>
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/checkpoint_note.h"
#include "core/ports.h"
#include "model/checkpoint.h"
#include "support/build_paths.h"
#include "support/data_sets.h"
#include "support/files.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace dl::test {
namespace {

using std::chrono::seconds;

const std::string kTrain = dl::test::kTrainBin;
constexpr seconds kRunTimeout{300};

std::vector<std::string> argv_of(const std::string& data, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {kTrain, "--data",   data,  "--threads",       "1", "--workers",
                                   "0",    "--device", "cpu", "--monitor-every", "0", "--seed",
                                   "5"};
  argv.insert(argv.end(), args.begin(), args.end());
  if (std::find(args.begin(), args.end(), "--epochs") == args.end()) {
    argv.insert(argv.end(), {"--epochs", "1"});
  }
  return argv;
}

// `world` ranks of dl-train on this machine, each told its place as torchrun tells it.
class Ranks {
 public:
  Ranks(int world, const std::string& run_dir, const std::string& data,
        const std::vector<std::string>& args, const EnvVars& extra = {}) {
    const std::string port = std::to_string(port_.port());
    for (int r = 0; r < world; ++r) {
      const EnvVars env = {{"RANK", std::to_string(r)},
                           {"LOCAL_RANK", std::to_string(r)},
                           {"WORLD_SIZE", std::to_string(world)},
                           {"LOCAL_WORLD_SIZE", std::to_string(world)},
                           {"GROUP_RANK", "0"},
                           {"MASTER_ADDR", "127.0.0.1"},
                           {"MASTER_PORT", port},
                           {"DL_RUN_DIR", run_dir}};
      EnvVars all = env;
      all.insert(all.end(), extra.begin(), extra.end());
      processes_.push_back(std::make_unique<Process>(argv_of(data, args), all));
    }
  }
  Process& rank(int r) { return *processes_.at(static_cast<std::size_t>(r)); }
  std::vector<Result> wait() {
    std::vector<Result> results;
    for (auto& p : processes_) results.push_back(p->wait(kRunTimeout));
    return results;
  }

 private:
  // Held while the ranks live: no other job on this machine gets rank 0's port meanwhile.
  PortReservation port_ = PortReservation::take();
  std::vector<std::unique_ptr<Process>> processes_;
};

Result one_process(const std::string& run_dir, const std::string& data,
                   const std::vector<std::string>& args, const EnvVars& extra = {}) {
  EnvVars env = {{"DL_RUN_DIR", run_dir}};
  env.insert(env.end(), extra.begin(), extra.end());
  return run(argv_of(data, args), env);
}

std::string show(const std::vector<Result>& results) {
  std::string s;
  for (std::size_t r = 0; r < results.size(); ++r) {
    s += "rank " + std::to_string(r) + " exit " + std::to_string(results[r].code) + ":\n" +
         results[r].err + "\n";
  }
  return s;
}

// ||a - b|| / ||b|| over every tensor of the two checkpoints' models.
double relative_difference(const std::string& a_path, const std::string& b_path) {
  const auto a = model::load_checkpoint(a_path).model_state;
  const auto b = model::load_checkpoint(b_path).model_state;
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    num += (a[i].second.to(at::kDouble) - b[i].second.to(at::kDouble)).pow(2).sum().item<double>();
    den += b[i].second.to(at::kDouble).pow(2).sum().item<double>();
  }
  return std::sqrt(num / den);
}

const std::string& fashion_subset(std::uint32_t train, std::uint32_t val) {
  static std::map<std::pair<std::uint32_t, std::uint32_t>, std::unique_ptr<TempDir>> made;
  static std::map<std::pair<std::uint32_t, std::uint32_t>, std::string> paths;
  auto& dir = made[{train, val}];
  if (!dir) {
    dir = std::make_unique<TempDir>();
    write_fashion_subset(dir->path(), train, val);
    paths[{train, val}] = dir->path();
  }
  return paths[{train, val}];
}

// The issue's figure: 20 steps, without gradient clipping, at most 1e-5. What difference there is
// comes from the CPU kernels' rounding, which AdamW's normalised steps amplify, and so depends on
// the instruction set oneDNN's kernels use (measured on one machine with ONEDNN_MAX_CPU_ISA):
// 2.2e-7 with SSE4.1, 1.6e-4 with AVX, 5.3e-5 with AVX2 (CI's machine, without AVX-512), 2.3e-6
// with AVX-512. Every process here uses SSE4.1's, which every x86-64 CPU of the last 15 years
// has: what is checked is the ranks' arithmetic (shares, averaging, buckets), not the kernels'.
TEST(DistributedTrain, TwoRanksOfBatch32EndWhereOneRankOfBatch64Does) {
  if (fashion_mnist_dir().empty()) GTEST_SKIP() << kNoFashion;
  const std::string data = fashion_subset(2048, 101);
  TempDir ws;
  const std::vector<std::string> steps = {"--limit-batches", "20", "--clip-norm", "0"};
  std::vector<std::string> two = steps, one = steps;
  two.insert(two.end(), {"--batch-size", "32"});
  one.insert(one.end(), {"--batch-size", "64"});
  const EnvVars same_kernels = {{"ONEDNN_MAX_CPU_ISA", "SSE41"}};
  Ranks ranks(2, ws / "two", data, two, same_kernels);
  const auto results = ranks.wait();
  ASSERT_EQ(results[0].code, 0) << show(results);
  ASSERT_EQ(results[1].code, 0) << show(results);
  const Result single = one_process(ws / "one", data, one, same_kernels);
  ASSERT_EQ(single.code, 0) << single.err;

  const double diff = relative_difference(ws / "two/last.pt", ws / "one/last.pt");
  std::cout << "2 ranks x 32 vs 1 rank x 64, 20 steps: relative difference " << diff << "\n";
  EXPECT_LE(diff, 1e-5);
  // Rank 0 alone wrote the run; the validation of 101 samples (51 + 50) reports one process's.
  EXPECT_FALSE(file_exists(ws / "two/train.log.1"));
  const Csv two_metrics = read_csv(ws / "two/metrics.csv");
  const Csv one_metrics = read_csv(ws / "one/metrics.csv");
  ASSERT_EQ(two_metrics.rows.size(), 1u);
  EXPECT_NEAR(two_metrics.number(0, "val_acc"), one_metrics.number(0, "val_acc"), 1e-9);
  EXPECT_NEAR(two_metrics.number(0, "train_loss"), one_metrics.number(0, "train_loss"), 1e-4);
}

TEST(DistributedTrain, ThreeRanksOnASetThreeDoesNotDivideMatchOneProcess) {
  if (fashion_mnist_dir().empty()) GTEST_SKIP() << kNoFashion;
  // 97 samples: each rank gets 33 (one padded), 4 batches of 8 = positions 0..95 of the
  // permutation; one process with batch 24 takes the same 4 batches.
  const std::string data = fashion_subset(97, 100);
  TempDir ws;
  Ranks ranks(3, ws / "three", data, {"--batch-size", "8", "--clip-norm", "0"});
  const auto results = ranks.wait();
  for (int r = 0; r < 3; ++r) ASSERT_EQ(results[r].code, 0) << show(results);
  const Result single = one_process(ws / "one", data, {"--batch-size", "24", "--clip-norm", "0"});
  ASSERT_EQ(single.code, 0) << single.err;
  const double diff = relative_difference(ws / "three/last.pt", ws / "one/last.pt");
  std::cout << "3 ranks x 8 vs 1 rank x 24 on 97 samples: relative difference " << diff << "\n";
  EXPECT_LE(diff, 1e-5);
  EXPECT_NEAR(read_csv(ws / "three/metrics.csv").number(0, "val_acc"),
              read_csv(ws / "one/metrics.csv").number(0, "val_acc"), 1e-9);
  // Validation's confusion matrix is summed over the ranks' unequal shares (34, 33, 33 of 100).
  EXPECT_EQ(read_file(ws / "three/confusion.csv"), read_file(ws / "one/confusion.csv"));
}

TEST(DistributedTrain, ACheckpointResumesUnderAnotherNumberOfRanks) {
  if (fashion_mnist_dir().empty()) GTEST_SKIP() << kNoFashion;
  const std::string data = fashion_subset(2048, 101);
  TempDir ws;
  const std::string run_dir = ws / "run";
  Ranks two(2, run_dir, data, {"--batch-size", "32", "--limit-batches", "5"});
  const auto first = two.wait();
  ASSERT_EQ(first[0].code, 0) << show(first);
  ASSERT_EQ(first[1].code, 0) << show(first);
  const Result alone = one_process(
      run_dir, data, {"--batch-size", "64", "--limit-batches", "5", "--resume", "--epochs", "2"});
  ASSERT_EQ(alone.code, 0) << alone.err;
  Ranks three(3, run_dir, data,
              {"--batch-size", "16", "--limit-batches", "5", "--resume", "--epochs", "3"});
  const auto last = three.wait();
  for (int r = 0; r < 3; ++r) ASSERT_EQ(last[r].code, 0) << show(last);
  // The run's global batch, 64, does not split over 3: it goes on at 16 x 3 and says so, and
  // last.json keeps recording the recipe's 64 (and learning rate) for the next resume.
  EXPECT_NE(last[0].out.find("the checkpoint's global batch 64 does not split evenly over 3 ranks; "
                             "training goes on at 48 (16 x 3) at its learning rate 0.001: give "
                             "--global-batch 63 or 66"),
            std::string::npos)
      << last[0].out;
  const auto note = parse_checkpoint_note(read_file(run_dir + "/last.json"));
  ASSERT_TRUE(note.has_value());
  EXPECT_EQ(note->global_batch, 64);
  EXPECT_EQ(note->base_lr, 0.001);
  const auto checkpoint = model::load_checkpoint(run_dir + "/last.pt");
  EXPECT_EQ(checkpoint.epoch, 3);
  EXPECT_EQ(std::get<std::int64_t>(checkpoint.extra.at("global_step")), 15);
  EXPECT_EQ(read_csv(run_dir + "/metrics.csv").rows.size(), 3u);
}

TEST(DistributedTrain, AStopSignalToOneRankStopsBothAndRankZeroSaves) {
  if (fashion_mnist_dir().empty()) GTEST_SKIP() << kNoFashion;
  const std::string data = fashion_subset(4096, 101);
  TempDir ws;
  Ranks ranks(2, ws / "run", data, {"--batch-size", "8", "--log-every", "5"});
  // Rank 0 prints a progress line every 5 batches once training runs.
  ASSERT_TRUE(wait_for_output(ranks.rank(0), " batch 10/", kRunTimeout)) << ranks.rank(0).out();
  ranks.rank(1).send_signal(SIGTERM);
  const auto results = ranks.wait();
  EXPECT_EQ(results[0].code, 128 + SIGTERM) << show(results);
  EXPECT_EQ(results[1].code, 128 + SIGTERM) << show(results);
  EXPECT_EQ(results[0].signal, 0) << "killed instead of stopping";
  EXPECT_EQ(results[1].signal, 0) << "killed instead of stopping";
  const auto checkpoint = model::load_checkpoint(ws / "run/last.pt");
  EXPECT_EQ(std::get<std::int64_t>(checkpoint.extra.at("interrupted_in_epoch")), 1);
  // Both stopped after the same step: rank 0 saved the step count rank 1 reports.
  const auto after = std::get<std::int64_t>(checkpoint.extra.at("interrupted_after_batches"));
  EXPECT_GE(after, 10);
  EXPECT_NE(results[1].out.find("received in epoch 1 after " + std::to_string(after) + " batches"),
            std::string::npos)
      << show(results);
}

// Exact resume across world sizes: a run of global batch 96 stopped inside its epoch under 2
// ranks (x 48), resumed and stopped again under 1 (x 96), and finished under 3 (x 32) ends where
// one uninterrupted process of batch 96 does, within the kernels' rounding (the figure above;
// 2.8e-7 and 3.0e-7 for 2 and 3 ranks uninterrupted over these 20 steps, where batches of 24 and
// 48 over 40 steps already differ by 2.4e-3 from the kernels' blocking alone):
// DistributedSampler's strided split gives each global step the same samples whatever the world
// size, so any sample taken twice or skipped would move the weights by about the learning rate.
TEST(DistributedTrain, MidEpochResumesUnderTwoOneAndThreeRanksEndWhereOneRunDoes) {
  if (fashion_mnist_dir().empty()) GTEST_SKIP() << kNoFashion;
  const std::string data = fashion_subset(2048, 101);
  TempDir ws;
  const EnvVars same_kernels = {{"ONEDNN_MAX_CPU_ISA", "SSE41"}};
  auto args = [](const char* batch, std::vector<std::string> more) {
    std::vector<std::string> a = {"--limit-batches", "20", "--clip-norm",  "0",
                                  "--log-every",     "1",  "--batch-size", batch};
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  const Result reference =
      one_process(ws / "ref", data, args("96", {"--checkpoint-every", "0"}), same_kernels);
  ASSERT_EQ(reference.code, 0) << reference.err;

  const std::string run_dir = ws / "run";
  {
    Ranks two(2, run_dir, data, args("48", {"--checkpoint-every", "0"}), same_kernels);
    ASSERT_TRUE(wait_for_output(two.rank(0), " batch 4/20", kRunTimeout)) << two.rank(0).out();
    two.rank(1).send_signal(SIGTERM);
    const auto stopped = two.wait();
    ASSERT_EQ(stopped[0].code, 128 + SIGTERM) << show(stopped);
  }
  const auto first = model::load_checkpoint(run_dir + "/last.pt");
  const auto p1 = std::get<std::int64_t>(first.extra.at("position_batches"));
  ASSERT_LT(p1, 16) << "the two ranks went on for 12 steps after the signal";
  EXPECT_EQ(std::get<std::int64_t>(first.extra.at("position_global_batch")), 96);
  {
    EnvVars env = {{"DL_RUN_DIR", run_dir}};
    env.insert(env.end(), same_kernels.begin(), same_kernels.end());
    Process one(argv_of(data, args("96", {"--checkpoint-every", "0", "--resume"})), env);
    const std::string next = " batch " + std::to_string(p1 + 2) + "/20";
    ASSERT_TRUE(wait_for_output(one, next, kRunTimeout)) << one.out();
    one.send_signal(SIGTERM);
    const Result stopped = one.wait(kRunTimeout);
    ASSERT_EQ(stopped.code, 128 + SIGTERM) << show(stopped);
    EXPECT_NE(stopped.out.find("the epoch goes on at batch " + std::to_string(p1 + 1)),
              std::string::npos)
        << show(stopped);
  }
  const auto second = model::load_checkpoint(run_dir + "/last.pt");
  const auto p2 = std::get<std::int64_t>(second.extra.at("position_batches"));
  EXPECT_GT(p2, p1);
  ASSERT_LT(p2, 20);
  Ranks three(3, run_dir, data, args("32", {"--checkpoint-every", "0", "--resume"}), same_kernels);
  const auto finished = three.wait();
  for (int r = 0; r < 3; ++r) ASSERT_EQ(finished[r].code, 0) << show(finished);
  EXPECT_NE(finished[0].out.find("the epoch goes on at batch " + std::to_string(p2 + 1)),
            std::string::npos)
      << finished[0].out;

  const double diff = relative_difference(run_dir + "/last.pt", ws / "ref/last.pt");
  std::cout << "2 ranks to step " << p1 << ", 1 rank to step " << p2
            << ", 3 ranks to step 20 vs one run: relative difference " << diff << "\n";
  EXPECT_LE(diff, 1e-5);
  const Csv resumed = read_csv(run_dir + "/metrics.csv");
  const Csv once = read_csv(ws / "ref/metrics.csv");
  ASSERT_EQ(resumed.rows.size(), 1u);
  EXPECT_NEAR(resumed.number(0, "train_loss"), once.number(0, "train_loss"),
              1e-5 * once.number(0, "train_loss"));
  // A prediction on the edge may flip with the rounding: one sample of the 1920.
  EXPECT_NEAR(resumed.number(0, "train_acc"), once.number(0, "train_acc"), 1.01 / 1920);
}

// --resume on other hardware keeps the recipe without being told it again: a run of 2 ranks x 48
// at --lr-scaling linear (global batch 96, learning rate 2 x --lr) stopped inside its epoch goes on
// in one process whose memory takes 24 at once (--batch-size 24: 96 in 4 micro-batches) and ends
// under 3 ranks that take 16 at once (32 each, in 2 micro-batches), within the kernels' rounding of
// one uninterrupted process of batch 96 at 2 x --lr. Read from last.json (core/checkpoint_note.h).
// Within 1e-3: the pieces round otherwise than whole batches (1.1e-4 measured here; AdamW turns
// the rounding of near-zero gradients into whole steps), while losing the recipe ends far away
// (0.27 resumed at global batch 24, 0.12 at --lr 0.001, measured on the same run).
TEST(DistributedTrain, ResumeElsewhereKeepsTheGlobalBatchAndLearningRateWithoutBeingToldThem) {
  if (fashion_mnist_dir().empty()) GTEST_SKIP() << kNoFashion;
  const std::string data = fashion_subset(2048, 101);
  TempDir ws;
  const EnvVars same_kernels = {{"ONEDNN_MAX_CPU_ISA", "SSE41"}};
  auto args = [](const char* batch, std::vector<std::string> more) {
    std::vector<std::string> a = {"--limit-batches",    "20", "--clip-norm",  "0",
                                  "--log-every",        "1",  "--batch-size", batch,
                                  "--checkpoint-every", "0"};
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  const Result reference =
      one_process(ws / "ref", data, args("96", {"--lr", "0.002"}), same_kernels);
  ASSERT_EQ(reference.code, 0) << reference.err;

  const std::string run_dir = ws / "run";
  {
    Ranks two(2, run_dir, data, args("48", {"--lr-scaling", "linear"}), same_kernels);
    ASSERT_TRUE(wait_for_output(two.rank(0), " batch 4/20", kRunTimeout)) << two.rank(0).out();
    two.rank(1).send_signal(SIGTERM);
    const auto stopped = two.wait();
    ASSERT_EQ(stopped[0].code, 128 + SIGTERM) << show(stopped);
  }
  const auto first = model::load_checkpoint(run_dir + "/last.pt");
  const auto p1 = std::get<std::int64_t>(first.extra.at("position_batches"));
  ASSERT_LT(p1, 16) << "the two ranks went on for 12 steps after the signal";
  const auto note = parse_checkpoint_note(read_file(run_dir + "/last.json"));
  ASSERT_TRUE(note.has_value());
  EXPECT_EQ(note->global_batch, 96);
  EXPECT_EQ(note->base_lr, 0.002);
  {
    EnvVars env = {{"DL_RUN_DIR", run_dir}};
    env.insert(env.end(), same_kernels.begin(), same_kernels.end());
    Process one(argv_of(data, args("24", {"--resume", "--lr-scaling", "linear"})), env);
    const std::string next = " batch " + std::to_string(p1 + 2) + "/20";
    ASSERT_TRUE(wait_for_output(one, next, kRunTimeout)) << one.out();
    one.send_signal(SIGTERM);
    const Result stopped = one.wait(kRunTimeout);
    ASSERT_EQ(stopped.code, 128 + SIGTERM) << show(stopped);
    EXPECT_NE(stopped.out.find("--resume keeps the checkpoint's global batch 96: 96 in 4 "
                               "micro-batches of at most 24"),
              std::string::npos)
        << show(stopped);
    EXPECT_NE(stopped.out.find("--resume keeps the checkpoint's learning rate 0.002"),
              std::string::npos)
        << show(stopped);
    EXPECT_NE(stopped.out.find("the epoch goes on at batch " + std::to_string(p1 + 1) +
                               ", the "
                               "next sample an uninterrupted run takes"),
              std::string::npos)
        << show(stopped);
  }
  const auto second = model::load_checkpoint(run_dir + "/last.pt");
  const auto p2 = std::get<std::int64_t>(second.extra.at("position_batches"));
  EXPECT_GT(p2, p1);
  ASSERT_LT(p2, 20);
  Ranks three(3, run_dir, data, args("16", {"--resume", "--lr-scaling", "linear"}), same_kernels);
  const auto finished = three.wait();
  for (int r = 0; r < 3; ++r) ASSERT_EQ(finished[r].code, 0) << show(finished);
  EXPECT_NE(finished[0].out.find("32 per rank x 3 ranks, in 2 micro-batches of at most 16"),
            std::string::npos)
      << finished[0].out;

  const double diff = relative_difference(run_dir + "/last.pt", ws / "ref/last.pt");
  std::cout << "2 ranks x 48 to step " << p1 << ", 1 rank x 4 x 24 to step " << p2
            << ", 3 ranks x 2 x 16 to step 20, no batch or lr given again, vs one run: relative "
               "difference "
            << diff << "\n";
  EXPECT_LE(diff, 1e-3);
}

// --- through dl-launch --------------------------------------------------------------------------

const std::string kLaunch = dl::test::kLaunchBin;

std::vector<std::string> launch_argv(const std::string& workspace, const std::string& data,
                                     const std::vector<std::string>& args) {
  std::vector<std::string> argv = {
      kLaunch, "--workspace",    workspace, "--device",        "cpu", "--data", data, "--threads",
      "1",     "--workers",      "0",       "--monitor-every", "0",   "--seed", "5",  "--epochs",
      "1",     "--grace-period", "10"};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

std::string rank_zero_lines(const Result& r) {
  return r.out + r.err;
}

// Two dl-launch, node ranks 0 and 1 on 127.0.0.1, one process each: the same world of two ranks
// as one dl-launch with two processes, so the same samples, the same steps, the same checkpoint.
TEST(DistributedLaunch, TwoNodesOnLoopbackEndWithTheCheckpointOfOneNodeWithTwoRanks) {
  if (fashion_mnist_dir().empty()) GTEST_SKIP() << kNoFashion;
  const std::string data = fashion_subset(2048, 101);
  TempDir one_ws, two_ws;
  const std::vector<std::string> train = {"--batch-size", "16", "--limit-batches", "10"};
  std::vector<std::string> one_node = train;
  one_node.insert(one_node.end(), {"--nproc-per-node", "2", "--name", "one"});
  const Result one = run(launch_argv(one_ws.path(), data, one_node), {}, kSchedulerVars);
  ASSERT_EQ(one.code, 0) << rank_zero_lines(one);

  const PortReservation hold = PortReservation::take();
  const std::string port = std::to_string(hold.port());
  std::vector<std::unique_ptr<Process>> nodes;
  for (const char* node : {"0", "1"}) {
    std::vector<std::string> args = train;
    args.insert(args.end(), {"--nproc-per-node", "1", "--nnodes", "2", "--node-rank", node,
                             "--master-addr", "127.0.0.1", "--master-port", port, "--name", "two"});
    nodes.push_back(std::make_unique<Process>(launch_argv(two_ws.path(), data, args), EnvVars{},
                                              kSchedulerVars));
  }
  const Result node0 = nodes[0]->wait(kRunTimeout);
  const Result node1 = nodes[1]->wait(kRunTimeout);
  ASSERT_EQ(node0.code, 0) << rank_zero_lines(node0) << rank_zero_lines(node1);
  ASSERT_EQ(node1.code, 0) << rank_zero_lines(node0) << rank_zero_lines(node1);
  std::cout << "--- node 0's terminal ---\n"
            << rank_zero_lines(node0) << "--- node 1's ---\n"
            << rank_zero_lines(node1);

  const std::string two_run = two_ws / "runs/two";
  EXPECT_TRUE(file_exists(two_run + "/plan.json"));
  EXPECT_TRUE(file_exists(two_run + "/plan-rank-1.json"));
  EXPECT_TRUE(file_exists(two_run + "/rank-0.log"));
  EXPECT_TRUE(file_exists(two_run + "/rank-1.log"));
  const double diff = relative_difference(two_run + "/last.pt", one_ws / "runs/one/last.pt");
  std::cout << "two nodes vs one node with two ranks: relative difference " << diff << "\n";
  EXPECT_EQ(diff, 0.0);
}

// --global-batch keeps the recipe: 64 samples per optimizer step as 4 micro-batches of 16 in one
// rank, and as 2 of 16 in each of two ranks (with --lr-scaling linear, which has no growth of the
// batch to follow), end where one process at batch 64 without accumulation does. The pieces' sums
// round differently from the whole batch's: the same bound as between world sizes, same kernels.
TEST(DistributedLaunch, GlobalBatchInMicroBatchesOnOneAndTwoRanksEndsWhereTheWholeBatchDoes) {
  if (fashion_mnist_dir().empty()) GTEST_SKIP() << kNoFashion;
  const std::string data = fashion_subset(2048, 101);
  TempDir ws;
  const EnvVars same_kernels = {{"ONEDNN_MAX_CPU_ISA", "SSE41"}};
  const std::vector<std::string> steps = {"--limit-batches", "20", "--clip-norm", "0"};
  std::vector<std::string> whole = steps;
  whole.insert(whole.end(), {"--batch-size", "64"});
  const Result ref = one_process(ws / "ref", data, whole, same_kernels);
  ASSERT_EQ(ref.code, 0) << ref.err;

  for (const char* nproc : {"1", "2"}) {
    std::vector<std::string> args = steps;
    args.insert(args.end(), {"--global-batch", "64", "--batch-size", "16", "--nproc-per-node",
                             nproc, "--lr-scaling", "linear", "--name", std::string("g") + nproc});
    const Result r = run(launch_argv(ws.path(), data, args), same_kernels, kSchedulerVars);
    ASSERT_EQ(r.code, 0) << rank_zero_lines(r);
    const std::string pieces = std::string(nproc) == "1" ? "4" : "2";
    const std::string per_rank = std::string(nproc) == "1" ? "64" : "32";
    const std::regex logged("batch " + per_rank + " in " + pieces +
                            " micro-batches of at most 16 \\(gradient accumulation");
    EXPECT_TRUE(std::regex_search(r.out + r.err, logged)) << rank_zero_lines(r);
    const double diff =
        relative_difference(ws / ("runs/g" + std::string(nproc) + "/last.pt"), ws / "ref/last.pt");
    std::cout << "--global-batch 64 on " << nproc << " rank(s), micro-batches of 16, vs batch 64 "
              << "at once, 20 steps: relative difference " << diff << "\n";
    EXPECT_LE(diff, 1e-5);
  }
}

// kill -9 of one rank's dl-train: dl-launch stops the other and exits with 137 and a line naming
// the rank and its log, within the grace period plus 5 s.
TEST(DistributedLaunch, AKilledRankEndsTheRunWithItsCodeAndName) {
  if (fashion_mnist_dir().empty()) GTEST_SKIP() << kNoFashion;
  const std::string data = fashion_subset(4096, 101);
  TempDir ws;
  Process launch(launch_argv(ws.path(), data,
                             {"--batch-size", "8", "--nproc-per-node", "2", "--name", "k",
                              "--log-every", "5", "--log-ranks", "all"}),
                 EnvVars{}, kSchedulerVars);
  // Rank 1's progress: training is under way on both.
  ASSERT_TRUE(wait_for_output(launch, "[rank 1]", kRunTimeout)) << launch.out();
  ASSERT_TRUE(wait_for_output(launch, " batch 10/", kRunTimeout)) << launch.out();
  const std::string pids = read_file("/proc/" + std::to_string(launch.pid()) + "/task/" +
                                     std::to_string(launch.pid()) + "/children");
  // dl-launch's children are the ranks, in rank order.
  std::istringstream in(pids);
  pid_t rank0 = 0, rank1 = 0;
  in >> rank0 >> rank1;
  ASSERT_GT(rank1, 0) << pids;
  const auto killed = std::chrono::steady_clock::now();
  ASSERT_EQ(kill(rank1, SIGKILL), 0);
  const Result r = launch.wait(kRunTimeout);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  std::cout << "kill -9 of rank 1: dl-launch exited " << r.code << " after " << took << " s\n"
            << r.err;
  EXPECT_EQ(r.code, 137);
  EXPECT_LE(took, 10 + 5);
  EXPECT_NE(r.err.find("rank 1 died of signal 9"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(ws / "runs/k/rank-1.log"), std::string::npos) << r.err;
  EXPECT_NE(kill(rank0, 0), 0) << "rank 0 still running";
}

// The pid of `launch`'s child that is rank `rank` (dl-launch's children are the ranks, in
// order); 0 when there is none (yet).
pid_t rank_pid(const Process& launch, int rank) {
  std::istringstream in(read_file("/proc/" + std::to_string(launch.pid()) + "/task/" +
                                  std::to_string(launch.pid()) + "/children"));
  pid_t pid = 0;
  for (int r = 0; r <= rank; ++r) {
    if (!(in >> pid)) return 0;
  }
  return pid;
}

// Waits until `needle` has appeared `n` times in the process's output.
bool wait_for_nth(Process& p, const std::string& needle, int n) {
  const auto deadline = std::chrono::steady_clock::now() + kRunTimeout;
  for (;;) {
    int count = 0;
    for (auto at = p.out().find(needle); at != std::string::npos; at = p.out().find(needle, at + 1))
      ++count;
    if (count >= n) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    // Reads what arrives for 50 ms (a needle that never comes).
    wait_for_output(p, "\x01 never \x01", std::chrono::milliseconds(50));
  }
}

// --max-restarts 2 with rank 1 killed (-9) twice, each time after a --checkpoint-every write: the
// job restarts both ranks from last.pt, finishes, and ends with the weights of a run that never
// failed; under --max-restarts 2 a third kill ends a job with the first failure's code (137).
TEST(DistributedLaunch, MaxRestartsRecoversFromAKilledRankWithTheWeightsOfAnUnbrokenRun) {
  if (fashion_mnist_dir().empty()) GTEST_SKIP() << kNoFashion;
  // 256 steps of 8 a rank (about 4 s): long enough for a kill to land inside the epoch.
  const std::string data = fashion_subset(4096, 101);
  TempDir ws;
  auto args = [](const char* name, const char* restarts) {
    return std::vector<std::string>{
        "--batch-size",       "8",  "--log-every",    "1",      "--nproc-per-node", "2",
        "--checkpoint-every", "30", "--max-restarts", restarts, "--name",           name};
  };
  const Result unbroken = run(launch_argv(ws.path(), data, args("ref", "0")), {}, kSchedulerVars);
  ASSERT_EQ(unbroken.code, 0) << rank_zero_lines(unbroken);

  Process launch(launch_argv(ws.path(), data, args("re", "2")), EnvVars{}, kSchedulerVars);
  // The restart's lines go to stderr; its rank 0 says "resumed from" on stdout.
  for (const char* when : {"at step 60 (", "resumed from"}) {
    ASSERT_TRUE(wait_for_output(launch, when, kRunTimeout)) << launch.out();
    if (std::string(when) == "resumed from") {
      ASSERT_TRUE(wait_for_output(launch, "at step 150 (", kRunTimeout)) << launch.out();
    }
    const pid_t rank1 = rank_pid(launch, 1);
    ASSERT_GT(rank1, 0);
    ASSERT_EQ(kill(rank1, SIGKILL), 0);
  }
  const Result r = launch.wait(kRunTimeout);
  ASSERT_EQ(r.code, 0) << rank_zero_lines(r);
  const std::string lines = rank_zero_lines(r);
  // The restart line names the step it resumes from (last.json beside last.pt).
  EXPECT_TRUE(std::regex_search(
      lines,
      std::regex("restart 2 of 2 \\(--max-restarts\\): rank 1 died of signal 9 \\(Killed\\); "
                 "starting all 2 local ranks again, resuming from " +
                 ws / "runs/re/last.pt" + " \\(step (150|180|210|240), batch \\d+ of epoch 1\\)")))
      << lines;
  const auto a = model::load_checkpoint(ws / "runs/ref/last.pt");
  const auto b = model::load_checkpoint(ws / "runs/re/last.pt");
  EXPECT_EQ(std::get<std::int64_t>(b.extra.at("global_step")), 256);
  ASSERT_EQ(a.model_state.size(), b.model_state.size());
  for (std::size_t i = 0; i < a.model_state.size(); ++i) {
    EXPECT_TRUE(at::equal(a.model_state[i].second, b.model_state[i].second))
        << a.model_state[i].first;
  }

  // Under --max-restarts 2 a third kill ends the job with the first failure's code.
  Process thrice(launch_argv(ws.path(), data, args("thrice", "2")), EnvVars{}, kSchedulerVars);
  for (int kill_no = 0; kill_no < 3; ++kill_no) {
    // Training under way in the attempt: its first checkpoint line, or its resume line.
    ASSERT_TRUE(kill_no == 0 ? wait_for_output(thrice, "at step 30 (", kRunTimeout)
                             : wait_for_nth(thrice, "resumed from", kill_no))
        << thrice.out();
    pid_t rank1 = 0;
    while ((rank1 = rank_pid(thrice, 1)) == 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_EQ(kill(rank1, SIGKILL), 0);
  }
  const Result ended = thrice.wait(kRunTimeout);
  EXPECT_EQ(ended.code, 137) << rank_zero_lines(ended);
  EXPECT_NE(rank_zero_lines(ended).find("the 2 restart(s) of --max-restarts are used up; exit 137"),
            std::string::npos)
      << rank_zero_lines(ended);
}

// Two nodes (two dl-launch on loopback, one rank each, --max-restarts 1): rank 1's process is
// killed; its node restarts it, rank 0 loses its peer (exit 75) and its node restarts it too, and
// the two meet again at the same master address and port (c10d's static rendezvous), resume from
// rank 0's last.pt and end with the weights of the uninterrupted run.
TEST(DistributedLaunch, BothNodesRestartAndMeetAgainAfterAKilledRank) {
  if (fashion_mnist_dir().empty()) GTEST_SKIP() << kNoFashion;
  const std::string data = fashion_subset(4096, 101);
  TempDir ws;
  const std::vector<std::string> train = {"--batch-size",       "8",  "--log-every",    "1",
                                          "--checkpoint-every", "30", "--max-restarts", "1"};
  auto nodes_args = [&](const char* node, const std::string& port, const char* name) {
    std::vector<std::string> args = train;
    args.insert(args.end(), {"--nproc-per-node", "1", "--nnodes", "2", "--node-rank", node,
                             "--master-addr", "127.0.0.1", "--master-port", port, "--name", name});
    return launch_argv(ws.path(), data, args);
  };
  {
    const PortReservation hold = PortReservation::take();
    const std::string port = std::to_string(hold.port());
    Process n0(nodes_args("0", port, "ref"), EnvVars{}, kSchedulerVars);
    Process n1(nodes_args("1", port, "ref"), EnvVars{}, kSchedulerVars);
    ASSERT_EQ(n0.wait(kRunTimeout).code, 0);
    ASSERT_EQ(n1.wait(kRunTimeout).code, 0);
  }
  const PortReservation hold = PortReservation::take();
  const std::string port = std::to_string(hold.port());
  Process n0(nodes_args("0", port, "re"), EnvVars{}, kSchedulerVars);
  Process n1(nodes_args("1", port, "re"), EnvVars{}, kSchedulerVars);
  ASSERT_TRUE(wait_for_output(n0, "at step 60 (", kRunTimeout)) << n0.out();
  const pid_t rank1 = rank_pid(n1, 0);
  ASSERT_GT(rank1, 0);
  ASSERT_EQ(kill(rank1, SIGKILL), 0);
  const Result r0 = n0.wait(kRunTimeout);
  const Result r1 = n1.wait(kRunTimeout);
  EXPECT_EQ(r0.code, 0) << rank_zero_lines(r0);
  EXPECT_EQ(r1.code, 0) << rank_zero_lines(r1);
  EXPECT_NE(r1.err.find(
                "restart 1 of 1 (--max-restarts): rank 1 died of signal 9 (Killed); "
                "starting this node's rank again, resuming from rank 0's last.pt where it has one"),
            std::string::npos)
      << r1.err;
  EXPECT_NE(r0.err.find("restart 1 of 1 (--max-restarts): rank 0 exited with code 75"),
            std::string::npos)
      << r0.err;
  EXPECT_NE(r0.out.find("inside epoch 1 at step "), std::string::npos) << r0.out;
  const auto a = model::load_checkpoint(ws / "runs/ref/last.pt");
  const auto b = model::load_checkpoint(ws / "runs/re/last.pt");
  ASSERT_EQ(a.model_state.size(), b.model_state.size());
  for (std::size_t i = 0; i < a.model_state.size(); ++i) {
    EXPECT_TRUE(at::equal(a.model_state[i].second, b.model_state[i].second))
        << a.model_state[i].first;
  }
}

}  // namespace
}  // namespace dl::test
