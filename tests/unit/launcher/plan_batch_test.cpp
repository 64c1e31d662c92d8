// The plan's batch size: when the search runs (a GPU or a --memory-budget, the program being
// dl-train, no number given), its budget, and the choice made from a search's result: the answer
// with its reason, the workers planned for it, and the clear errors when nothing fits.
#include <gtest/gtest.h>

#include "core/errors.h"
#include "launcher/plan.h"
#include "support/matchers.h"

namespace dl::test {
namespace {

constexpr std::uint64_t MiB = 1ull << 20;

Facts cpu_machine() {
  Facts f;
  f.cpu.online = f.cpu.usable = 4;
  f.memory.total = 16ull << 30;
  f.memory.usable = 12ull << 30;
  f.memory.usable_reason = "MemAvailable";
  f.shm = {true, 8ull << 30, 8ull << 30};
  f.gpu.note = "NVML not found";
  return f;
}

Facts gpu_machine() {
  Facts f = cpu_machine();
  f.gpu.available = true;
  f.gpu.gpus.push_back({0, "NVIDIA A100-SXM4-80GB", 80ull << 30, 60ull << 30, 8, 0});
  return f;
}

Request dl_train_request() {
  Request r;
  r.probe_unavailable.clear();  // the program is dl-train
  return r;
}

ProbeResult trial(std::int64_t batch, std::uint64_t peak, bool oom = false) {
  ProbeResult t;
  t.batch = batch;
  t.peak_bytes = peak;
  t.out_of_memory = oom;
  t.step_seconds = 0.01;
  return t;
}

BatchSearchRecord searched(std::int64_t batch, std::uint64_t budget) {
  BatchSearchRecord s;
  s.budget = budget;
  s.budget_reason = "from --memory-budget";
  s.result.batch = batch;
  s.result.trials = {trial(8, 200 * MiB), trial(32, 260 * MiB), trial(batch, budget - MiB),
                     trial(batch + 8, budget + MiB)};
  s.seconds = 4.26;
  return s;
}

TEST(BatchSearchWanted, OnAGpuOrWithABudgetWhenNoNumberIsGiven) {
  Request r = dl_train_request();
  EXPECT_FALSE(wants_batch_search(r, "cpu"));
  EXPECT_TRUE(wants_batch_search(r, "cuda:0"));
  r.memory_budget = Sourced<std::uint64_t>{1ull << 30, "--memory-budget"};
  EXPECT_TRUE(wants_batch_search(r, "cpu"));

  Request given = r;
  given.batch_size = {128, "--batch-size"};
  EXPECT_FALSE(wants_batch_search(given, "cuda:0")) << "a number given is used as is";

  Request other = r;
  other.probe_unavailable = "the program is /usr/bin/python3, not dl-train";
  EXPECT_FALSE(wants_batch_search(other, "cuda:0")) << "only dl-train has the probe mode";
}

TEST(BatchSearchBudget, GivenBudgetWins) {
  Request r = dl_train_request();
  r.memory_budget = Sourced<std::uint64_t>{6ull << 30, "--memory-budget"};
  const auto b = batch_search_budget(gpu_machine(), r, "cuda:0");
  EXPECT_EQ(b.value, 6ull << 30);
  EXPECT_EQ(b.reason, "from --memory-budget");
}

TEST(BatchSearchBudget, FreeGpuMemoryLessTheMargin) {
  Request r = dl_train_request();
  auto b = batch_search_budget(gpu_machine(), r, "cuda:0");
  EXPECT_EQ(b.value, static_cast<std::uint64_t>(0.9 * static_cast<double>(60ull << 30)));
  EXPECT_TRUE(contains(b.reason, "free memory of cuda:0 (60.0 GiB) less 10%")) << b.reason;

  r.memory_margin = {0.25, "--memory-margin"};
  b = batch_search_budget(gpu_machine(), r, "cuda:0");
  EXPECT_EQ(b.value, 45ull << 30);
  EXPECT_TRUE(contains(b.reason, "less 25% (memory-margin from --memory-margin)")) << b.reason;
}

TEST(BatchSearchBudget, UsableRamOnTheCpu) {
  const auto b = batch_search_budget(cpu_machine(), dl_train_request(), "cpu");
  EXPECT_EQ(b.value, 12ull << 30);
  EXPECT_TRUE(contains(b.reason, "usable RAM")) << b.reason;
}

TEST(PlanBatchSearch, WithoutGpuOrBudgetTheDefaultSaysWhereTheSearchRuns) {
  const Plan p = make_plan(cpu_machine(), dl_train_request());
  EXPECT_EQ(p.batch_size.value, 64);
  EXPECT_TRUE(contains(p.batch_size.reason, "searched for on a GPU or with --memory-budget"))
      << p.batch_size.reason;
  EXPECT_FALSE(p.batch_search);
}

TEST(PlanBatchSearch, ProgramWithoutProbeModeKeepsTheDefaultAndSaysWhy) {
  Request r;
  r.probe_unavailable = "the program is /usr/bin/python3, not dl-train";
  const Plan p = make_plan(gpu_machine(), r);
  EXPECT_EQ(p.batch_size.value, 64);
  EXPECT_TRUE(contains(p.batch_size.reason, "python3, not dl-train")) << p.batch_size.reason;
}

TEST(PlanBatchSearch, TheSearchedBatchIsChosenWithItsReason) {
  Request r = dl_train_request();
  r.memory_budget = Sourced<std::uint64_t>{500 * MiB, "--memory-budget"};
  const BatchSearchRecord s = searched(312, 500 * MiB);
  const Plan p = make_plan(cpu_machine(), r, &s);
  EXPECT_EQ(p.batch_size.value, 312);
  EXPECT_TRUE(contains(p.batch_size.reason, "largest that fits 500.0 MiB (from --memory-budget)"))
      << p.batch_size.reason;
  EXPECT_TRUE(contains(p.batch_size.reason, "peak 499.0 MiB")) << p.batch_size.reason;
  EXPECT_TRUE(contains(p.batch_size.reason, "4 probes, 4.3 s")) << p.batch_size.reason;
  ASSERT_TRUE(p.batch_search);
  EXPECT_EQ(p.batch_search->result.trials.size(), 4u);
}

// The fastest-that-fits reason says the largest is slower only where its rate was measured (a
// new user's trial read "is slower" beside a search line saying its rate was never measured).
TEST(PlanBatchSearch, TheLargestIsCalledSlowerOnlyWhereMeasured) {
  Request r = dl_train_request();
  r.memory_budget = Sourced<std::uint64_t>{500 * MiB, "--memory-budget"};
  BatchSearchRecord s = searched(32, 500 * MiB);
  s.result.trials[1].step_seconds = 0.01;  // batch 32: 3200 samples/s
  s.result.trials[2].batch = 312;          // the largest that fits: 312 samples/s
  s.result.trials[2].step_seconds = 1.0;
  s.result.choice.largest = 312;
  EXPECT_TRUE(contains(make_plan(cpu_machine(), r, &s).batch_size.reason,
                       "fastest that fits 500.0 MiB (from --memory-budget): peak 260.0 MiB, 3200 "
                       "samples/s (the largest, 312, is slower: 312 samples/s)"))
      << make_plan(cpu_machine(), r, &s).batch_size.reason;
  s.result.trials[2].step_seconds = 0;  // its probe timed no step
  EXPECT_TRUE(contains(make_plan(cpu_machine(), r, &s).batch_size.reason,
                       "(the largest, 312, trains at an unmeasured rate)"))
      << make_plan(cpu_machine(), r, &s).batch_size.reason;
}

TEST(PlanBatchSearch, CachedAnswerSaysSo) {
  Request r = dl_train_request();
  BatchSearchRecord s = searched(312, 500 * MiB);
  s.cached = true;
  const Plan p = make_plan(gpu_machine(), r, &s);
  EXPECT_EQ(p.batch_size.value, 312);
  EXPECT_TRUE(contains(p.batch_size.reason, "cached, --retune searches again"))
      << p.batch_size.reason;
}

TEST(PlanBatchSearch, WorkersArePlannedForTheSearchedBatch) {
  Request r = dl_train_request();
  r.samples = Sourced<std::int64_t>{6000, "--samples"};
  r.sample_bytes = {28 * 28 * 4, "Fashion-MNIST"};
  r.memory_budget = Sourced<std::uint64_t>{500 * MiB, "--memory-budget"};
  Facts f = cpu_machine();
  f.cpu.usable = 16;
  const BatchSearchRecord s = searched(2000, 500 * MiB);
  const Plan p = make_plan(f, r, &s);
  EXPECT_EQ(p.workers.value, 3) << p.workers.reason;  // 6000 / 2000 batches per epoch
}

TEST(PlanBatchSearch, TheWholeDataSetIsSaid) {
  Request r = dl_train_request();
  BatchSearchRecord s = searched(5000, 500 * MiB);
  s.max_batch = 5000;
  EXPECT_TRUE(contains(make_plan(gpu_machine(), r, &s).batch_size.reason, "the whole data set"));
}

TEST(PlanBatchSearch, NothingFitsAGivenBudgetIsBadInput) {
  Request r = dl_train_request();
  r.memory_budget = Sourced<std::uint64_t>{100 * MiB, "--memory-budget"};
  BatchSearchRecord s;
  s.budget = 100 * MiB;
  s.budget_reason = "from --memory-budget";
  s.result.trials = {trial(8, 230 * MiB), trial(4, 228 * MiB), trial(2, 227 * MiB),
                     trial(1, 226 * MiB)};
  try {
    make_plan(cpu_machine(), r, &s);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.code(), exit_code::kUsage);
    const std::string m = e.what();
    EXPECT_TRUE(contains(m, "no batch fits in 100.0 MiB")) << m;
    EXPECT_TRUE(contains(m, "batch 1 peaked at 226.0 MiB")) << m;
    EXPECT_TRUE(contains(m, "--memory-budget")) << m;
  }
}

TEST(PlanBatchSearch, NothingFitsAFullGpuIsUnavailable) {
  BatchSearchRecord s;
  s.budget = 1ull << 30;
  s.budget_reason = "free memory of cuda:0";
  s.result.trials = {trial(8, 0, true), trial(4, 0, true), trial(2, 0, true), trial(1, 0, true)};
  try {
    make_plan(gpu_machine(), dl_train_request(), &s);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.code(), exit_code::kUnavailable);
    EXPECT_TRUE(contains(e.what(), "batch 1 ran out of memory")) << e.what();
  }
}

TEST(PlanBatchSearch, EveryProbeFailingSaysWhy) {
  BatchSearchRecord s;
  s.budget = 1ull << 30;
  ProbeResult crashed = trial(8, 0);
  crashed.error = "killed by signal 11";
  s.result.trials = {crashed};
  try {
    make_plan(gpu_machine(), dl_train_request(), &s);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.code(), exit_code::kUnavailable);
    EXPECT_TRUE(contains(e.what(), "every probe failed (batch 8: killed by signal 11)"))
        << e.what();
    EXPECT_TRUE(contains(e.what(), "--batch-size")) << e.what();
  }
}

TEST(PlanBatchSearch, AGivenBatchSizeMakesTheBudgetUnused) {
  Request r = dl_train_request();
  r.batch_size = {96, "--batch-size"};
  r.memory_budget = Sourced<std::uint64_t>{1ull << 30, "--memory-budget"};
  const Plan p = make_plan(cpu_machine(), r);
  EXPECT_EQ(p.batch_size.value, 96);
  bool warned = false;
  for (const auto& w : p.warnings) warned |= contains(w, "--memory-budget is not used");
  EXPECT_TRUE(warned);
}

TEST(PlanBatchSearch, BudgetAboveTheUsableRamIsWarnedAbout) {
  Request r = dl_train_request();
  r.memory_budget = Sourced<std::uint64_t>{64ull << 30, "--memory-budget"};
  const BatchSearchRecord s = searched(4096, 64ull << 30);
  const Plan p = make_plan(cpu_machine(), r, &s);
  bool warned = false;
  for (const auto& w : p.warnings) warned |= contains(w, "more than the usable RAM");
  EXPECT_TRUE(warned);
}

}  // namespace
}  // namespace dl::test
