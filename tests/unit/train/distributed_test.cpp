// Data-parallel training on c10d, two ranks as two threads of this process over Gloo on loopback
// (label "unit"): gradients averaged in buckets equal one process's on the whole batch, with and
// without overlap; an out-of-memory on one rank makes both retry in the same pieces; the loss
// scaler skips on every rank when one rank's gradients overflow; a stop signal is agreed. And
// the sampler's index lists (DistributedSampler's, checked by hand here and against Python's in
// distributed_python_test.cpp), the bucket assignment, and the torchrun contract.
#include <ATen/Parallel.h>
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <torch/optim/adamw.h>
#include <torch/types.h>
#include <unistd.h>

#include <algorithm>
#include <exception>
#include <functional>
#include <map>
#include <optional>
#include <thread>

#include "core/errors.h"
#include "core/ports.h"
#include "train/amp/train_step.h"
#include "train/dist/collectives.h"
#include "train/dist/distributed_sampler.h"
#include "train/dist/distributed_step.h"
#include "train/dist/gradient_buckets.h"
#include "train_test_support.h"

namespace dl::test {
namespace {

using namespace dl::train;

bool has_gloo() {
  const auto b = process_group_backends();
  return std::find(b.begin(), b.end(), "gloo") != b.end();
}

// Tests that form a Gloo group skip where the LibTorch was built without its Gloo headers (the
// image's, built offline from Debian's libtorch-dev without libgloo-dev).
#define SKIP_WITHOUT_GLOO() \
  if (!has_gloo()) GTEST_SKIP() << "this LibTorch build has no Gloo process group (libgloo-dev)"

// Runs `body(rank, group)` on two ranks at once, each a thread with its own process group.
void on_two_ranks(const std::function<void(int, Collectives&)>& body) {
  const PortReservation hold = PortReservation::take();
  const int port = hold.port();
  std::exception_ptr errors[2];
  auto rank_main = [&](int rank) {
    try {
      DistContract c;
      c.rank = rank;
      c.world_size = 2;
      c.master_port = port;
      GroupOptions options;
      options.rendezvous_seconds = 30;
      options.collective_seconds = 30;
      auto group = Collectives::connect(c, options, c10::kCPU);
      body(rank, *group);
    } catch (...) {
      errors[rank] = std::current_exception();
    }
  };
  std::thread other(rank_main, 1);
  rank_main(0);
  other.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

struct RankSetup {
  std::unique_ptr<model::Model> net;
  std::unique_ptr<torch::optim::AdamW> optimizer;
  std::unique_ptr<GradScaler> scaler;
  std::unique_ptr<StepRunner> runner;
};

RankSetup make_rank(std::unique_ptr<model::Model> net, bool scaled = false,
                    std::int64_t micro = 0) {
  RankSetup r;
  r.net = std::move(net);
  r.optimizer =
      std::make_unique<torch::optim::AdamW>(r.net->parameters(), torch::optim::AdamWOptions(1e-3));
  ScalerOptions so;
  so.enabled = scaled;
  r.scaler = std::make_unique<GradScaler>(so, c10::kCPU, ScalerKernels::kPlain);
  r.runner = std::make_unique<StepRunner>(*r.net, *r.optimizer, r.net->parameters(), *r.scaler,
                                          Precision::kFp32, c10::kCPU, /*clip_norm=*/0.0,
                                          MicroBatching(micro));
  return r;
}

// The parameters after `steps` steps of one process on the whole batch of 64, in one piece or
// in two micro-batches of 32 (gradient accumulation: 0.5 g_a + 0.5 g_b, the very arithmetic of
// two ranks averaging g_a / 2 + g_b / 2, so those must agree to the bit).
std::vector<at::Tensor> one_process_reference(int steps, std::int64_t micro = 0) {
  RankSetup r = make_rank(make_cnn(7), false, micro);
  const auto [x, y] = make_batch(64, 11);
  for (int s = 0; s < steps; ++s) r.runner->train(x, y);
  return clones(r.net->parameters());
}

// ||a - b|| / ||b|| over all parameters: float rounding (the sum over 64 samples taken in
// another order) leaves ~1e-7; AdamW turns the sign of near-zero gradients into whole steps of
// lr for a few elements, which an element-wise maximum would mistake for a difference.
double relative_difference(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    num += (a[i].to(torch::kDouble) - b[i].to(torch::kDouble)).pow(2).sum().item<double>();
    den += b[i].to(torch::kDouble).pow(2).sum().item<double>();
  }
  return std::sqrt(num / den);
}

// Each rank trains on its half of the batch of 64 (rank r: samples 32r to 32r + 31, the halves a
// micro-batched process takes; DistributedSampler's split is tested below). Returns each rank's
// parameters after `steps` steps.
std::vector<std::vector<at::Tensor>> two_ranks(int steps, BucketOptions buckets,
                                               std::int64_t oom_above_on_rank1 = 0) {
  std::vector<std::unique_ptr<model::Model>> nets;
  nets.push_back(make_cnn(7));
  nets.push_back(oom_above_on_rank1 > 0
                     ? std::make_unique<OomAboveModel>(make_cnn(7), oom_above_on_rank1)
                     : make_cnn(7));
  const auto [x, y] = make_batch(64, 11);
  std::vector<std::vector<at::Tensor>> out(2);
  on_two_ranks([&](int rank, Collectives& group) {
    RankSetup r = make_rank(std::move(nets[static_cast<std::size_t>(rank)]));
    DistributedStep sync(
        group, r.net->parameters(), buckets, [] { return 0; }, nullptr, c10::kCPU);
    r.runner->set_sync(&sync);
    const at::Tensor mine = torch::arange(32 * rank, 32 * rank + 32);
    for (int s = 0; s < steps; ++s)
      r.runner->train(x.index_select(0, mine), y.index_select(0, mine));
    if (oom_above_on_rank1 > 0) {
      EXPECT_EQ(r.runner->micro().limit(), oom_above_on_rank1) << rank;
    }
    out[static_cast<std::size_t>(rank)] = clones(r.net->parameters());
  });
  return out;
}

TEST(DistributedStep, TwoRanksOfHalfBatchesEndWhereOneProcessOnTheWholeBatchDoes) {
  SKIP_WITHOUT_GLOO();
  // One intra-op thread everywhere: the kernels then sum in one order whichever thread runs them.
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  const auto accumulated = one_process_reference(5, /*micro=*/32);
  const auto whole = one_process_reference(5);
  for (const bool overlap : {true, false}) {
    BucketOptions b;
    b.overlap = overlap;
    b.first_bucket_bytes = 4096;  // several buckets for the small CNN: order and offsets matter
    b.bucket_bytes = 64 * 1024;
    const auto ranks = two_ranks(5, b);
    EXPECT_EQ(max_abs_diff(ranks[0], ranks[1]), 0.0) << "ranks diverged, overlap " << overlap;
    EXPECT_EQ(max_abs_diff(ranks[0], accumulated), 0.0) << "overlap " << overlap;
    // Against the batch in one piece only the order of the sum over 64 samples differs: ~1e-7 on
    // LibTorch 1.13; 2.6's kernels sum in another order, and AdamW carries it to ~1e-4 by step 5.
    EXPECT_LE(relative_difference(ranks[0], whole), 2e-4) << overlap;
  }
  at::set_num_threads(threads);
}

TEST(DistributedStep, OutOfMemoryOnOneRankMakesBothRetryInItsPieces) {
  SKIP_WITHOUT_GLOO();
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  // Both ranks end in pieces of 16: each rank's 32 samples in two micro-batches, which is four
  // pieces of 16 of the whole batch in one process.
  const auto reference = one_process_reference(3, /*micro=*/16);
  BucketOptions b;
  b.first_bucket_bytes = 4096;
  const auto ranks = two_ranks(3, b, /*oom_above_on_rank1=*/16);
  EXPECT_EQ(max_abs_diff(ranks[0], ranks[1]), 0.0);
  EXPECT_LE(relative_difference(ranks[0], reference), 1e-6);
  at::set_num_threads(threads);
}

TEST(DistributedStep, ScalerSkipsOnEveryRankWhenOneRanksGradientsOverflow) {
  SKIP_WITHOUT_GLOO();
  std::vector<std::unique_ptr<model::Model>> nets;
  nets.push_back(make_cnn(7));
  nets.push_back(make_cnn(7));
  const auto before = clones(nets[0]->parameters());
  auto [x, y] = make_batch(32, 11);
  std::map<int, std::pair<bool, double>> seen;  // rank -> stepped, scale after
  std::mutex m;
  on_two_ranks([&](int rank, Collectives& group) {
    RankSetup r = make_rank(std::move(nets[static_cast<std::size_t>(rank)]), /*scaled=*/true);
    DistributedStep sync(
        group, r.net->parameters(), BucketOptions{}, [] { return 0; }, nullptr, c10::kCPU);
    r.runner->set_sync(&sync);
    at::Tensor images = x.clone();
    if (rank == 1) images[0].fill_(std::numeric_limits<float>::infinity());
    const StepResult step = r.runner->train(images, y);
    std::lock_guard<std::mutex> lock(m);
    seen[rank] = {step.stepped, r.scaler->current_scale()};
    EXPECT_EQ(max_abs_diff(r.net->parameters(), before), 0.0) << "rank " << rank << " stepped";
  });
  for (int rank : {0, 1}) {
    EXPECT_FALSE(seen[rank].first) << rank;
    EXPECT_EQ(seen[rank].second, 32768.0) << rank;
  }
}

// A stop signal on rank 1 and rank 0's checkpoint clock: both ranks agree on both after the step.
TEST(DistributedStep, AStopSignalOnOneRankStopsBothAndRankZerosCheckpointIsEveryones) {
  SKIP_WITHOUT_GLOO();
  auto [x, y] = make_batch(8, 11);
  std::vector<std::unique_ptr<model::Model>> nets;
  nets.push_back(make_cnn(7));
  nets.push_back(make_cnn(7));
  int agreed[2] = {-1, -1};
  bool checkpoint[2] = {false, false};
  on_two_ranks([&](int rank, Collectives& group) {
    RankSetup r = make_rank(std::move(nets[static_cast<std::size_t>(rank)]));
    DistributedStep sync(
        group, r.net->parameters(), BucketOptions{}, [rank] { return rank == 1 ? SIGTERM : 0; },
        [rank] { return rank == 0; }, c10::kCPU);
    r.runner->set_sync(&sync);
    const StepResult step = r.runner->train(x, y);
    agreed[rank] = step.stop_signal;
    checkpoint[rank] = step.checkpoint;
  });
  EXPECT_EQ(agreed[0], SIGTERM);
  EXPECT_EQ(agreed[1], SIGTERM);
  EXPECT_TRUE(checkpoint[0]);
  EXPECT_TRUE(checkpoint[1]) << "rank 1 did not learn of rank 0's checkpoint";
}

TEST(Collectives, ARankThatNeverArrivesEndsTheRendezvousWithACount) {
  SKIP_WITHOUT_GLOO();
  DistContract c;
  c.rank = 0;
  c.world_size = 3;
  const PortReservation hold = PortReservation::take();
  c.master_port = hold.port();
  GroupOptions options;
  options.rendezvous_seconds = 1;
  try {
    Collectives::connect(c, options, c10::kCPU);
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(e.code(), 75);
    EXPECT_NE(std::string(e.what()).find("1 of 3 ranks arrived within 1 s"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(c.master_port)),
              std::string::npos)
        << e.what();
  }
}

TEST(Collectives, APortInUseIsNamed) {
  SKIP_WITHOUT_GLOO();
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  DistContract c;
  c.world_size = 2;
  c.master_port = ntohs(addr.sin_port);
  try {
    Collectives::connect(c, GroupOptions{}, c10::kCPU);
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(e.code(), 75);
    EXPECT_NE(std::string(e.what()).find("port " + std::to_string(c.master_port) +
                                         " (MASTER_PORT) is already in use"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("--master-port"), std::string::npos) << e.what();
  }
  close(fd);
}

TEST(Collectives, ContractComesFromTorchrunsVariables) {
  const std::map<std::string, std::string> env = {
      {"RANK", "5"},           {"WORLD_SIZE", "8"},
      {"LOCAL_RANK", "1"},     {"LOCAL_WORLD_SIZE", "4"},
      {"GROUP_RANK", "1"},     {"MASTER_ADDR", "node-a"},
      {"MASTER_PORT", "29501"}};
  const DistContract c = read_contract([&](const char* name) -> std::optional<std::string> {
    auto it = env.find(name);
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  });
  EXPECT_EQ(c.rank, 5);
  EXPECT_EQ(c.world_size, 8);
  EXPECT_EQ(c.local_rank, 1);
  EXPECT_EQ(c.local_world_size, 4);
  EXPECT_EQ(c.group_rank, 1);
  EXPECT_EQ(c.master_addr, "node-a");
  EXPECT_EQ(c.master_port, 29501);
  EXPECT_TRUE(c.distributed());
  const DistContract none = read_contract([](const char*) { return std::nullopt; });
  EXPECT_FALSE(none.distributed());
}

TEST(Collectives, ARankOutsideTheWorldIsRefusedNamingTheVariable) {
  auto bad = [](std::map<std::string, std::string> env) {
    try {
      read_contract([&](const char* name) -> std::optional<std::string> {
        auto it = env.find(name);
        return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
      });
    } catch (const UserError& e) {
      EXPECT_EQ(e.code(), 64);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(bad({{"RANK", "2"}, {"WORLD_SIZE", "2"}}),
            "RANK=2: expected a rank below WORLD_SIZE=2");
  EXPECT_EQ(bad({{"WORLD_SIZE", "two"}}),
            "WORLD_SIZE=two: expected a whole number from 1 to 1048576");
  EXPECT_EQ(bad({{"MASTER_PORT", "70000"}}),
            "MASTER_PORT=70000: expected a whole number from 1 to 65535");
}

TEST(DistributedSampler, PadsFromTheHeadAndStrides) {
  const std::vector<std::int64_t> order = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0};
  EXPECT_EQ(shard(order, 3, 0, false), (std::vector<std::int64_t>{9, 6, 3, 0}));
  EXPECT_EQ(shard(order, 3, 1, false), (std::vector<std::int64_t>{8, 5, 2, 9}));
  EXPECT_EQ(shard(order, 3, 2, false), (std::vector<std::int64_t>{7, 4, 1, 8}));
  EXPECT_EQ(shard(order, 3, 2, true), (std::vector<std::int64_t>{7, 4, 1}));
  // Fewer samples than ranks: the list repeats to fill every rank.
  EXPECT_EQ(shard({4, 2}, 5, 4, false), (std::vector<std::int64_t>{4}));
  EXPECT_EQ(shard({4, 2}, 5, 3, false), (std::vector<std::int64_t>{2}));
  EXPECT_TRUE(shard({4, 2}, 5, 0, true).empty());
  EXPECT_EQ(shard_size(10, 3, false), 4);
  EXPECT_EQ(shard_size(10, 3, true), 3);
  EXPECT_EQ(shard_size(9, 3, true), 3);
}

TEST(DistributedSampler, OneRankGetsThePermutationAndRanksPartitionIt) {
  ShardSpec one;
  one.seed = 42;
  const auto all = distributed_indices(1000, one, 3);
  EXPECT_EQ(all, torch_randperm(1000, 45));
  std::vector<std::int64_t> merged(1000, -1);
  for (int r = 0; r < 4; ++r) {
    ShardSpec s = one;
    s.world = 4;
    s.rank = r;
    const auto mine = distributed_indices(1000, s, 3);
    ASSERT_EQ(mine.size(), 250u);
    for (std::size_t j = 0; j < mine.size(); ++j) merged[r + 4 * j] = mine[j];
  }
  EXPECT_EQ(merged, all);
  EXPECT_EQ(strided_indices(7, 2, 1), (std::vector<std::int64_t>{1, 3, 5}));
}

TEST(GradientBuckets, ReverseOrderSmallFirstBucketAndCaps) {
  // Sizes in floats: 4 bytes each.
  std::vector<at::Tensor> params = {torch::zeros({100}), torch::zeros({300}), torch::zeros({50}),
                                    torch::zeros({10})};
  BucketOptions o;
  o.first_bucket_bytes = 240;  // 60 floats
  o.bucket_bytes = 1600;       // 400 floats
  const auto b = assign_buckets(params, o);
  // Reverse: 10, 50 (first bucket: 60 floats), then 300 + 100 = 400 floats.
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0], (std::vector<std::size_t>{3, 2}));
  EXPECT_EQ(b[1], (std::vector<std::size_t>{1, 0}));
  params.push_back(torch::zeros({5}, torch::kDouble));
  const auto mixed = assign_buckets(params, o);
  EXPECT_EQ(mixed[0], (std::vector<std::size_t>{4}));  // a dtype of its own
}

}  // namespace
}  // namespace dl::test
