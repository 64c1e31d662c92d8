// The planner's rules, one at a time: workers and threads against the usable cores, the small
// data set rule, the host-feeding caps, /dev/shm, device and precision, and the requests it must
// refuse.
#include "launcher/plan.h"

#include <gtest/gtest.h>

#include <map>

#include "core/errors.h"
#include "launcher/launch.h"
#include "support/matchers.h"

namespace dl::test {
namespace {

Facts cpu_machine(int cores) {
  Facts f;
  f.cpu.online = cores;
  f.cpu.usable = cores;
  f.memory.total = 64ull << 30;
  f.memory.usable = 60ull << 30;
  f.shm = {true, 32ull << 30, 32ull << 30};
  f.gpu.note = "NVML not found";
  return f;
}

Facts gpu_machine(int cc_major, int cc_minor) {
  Facts f = cpu_machine(16);
  f.gpu.available = true;
  f.gpu.gpus.push_back({0, "GPU", 16ull << 30, 15ull << 30, cc_major, cc_minor});
  f.gpu.gpus.push_back({1, "GPU", 16ull << 30, 15ull << 30, cc_major, cc_minor});
  return f;
}

bool any_warning(const Plan& p, const std::string& part) {
  for (const auto& w : p.warnings) {
    if (contains(w, part)) return true;
  }
  return false;
}

struct CoresCase {
  int cores;
  int workers;
  int threads;
};

class CoresRule : public ::testing::TestWithParam<CoresCase> {};

TEST(PlanMeasured, DlTrainMeasuresWhatTheUserLeftOpen) {
  Request req;
  req.trainer_measures = true;
  const Plan p = make_plan(cpu_machine(2), req);
  EXPECT_TRUE(p.workers_measured);
  EXPECT_TRUE(p.threads_measured);
  // The rule's numbers stay in the plan for comparison, and the reason says who decides.
  EXPECT_EQ(p.workers.value, 1);
  EXPECT_NE(p.workers.reason.find("measured by dl-train at start"), std::string::npos)
      << p.workers.reason;

  req.workers = Sourced<int>{3, "--workers"};
  const Plan fixed = make_plan(cpu_machine(8), req);
  EXPECT_FALSE(fixed.workers_measured);
  EXPECT_EQ(fixed.workers.value, 3);
  EXPECT_TRUE(fixed.threads_measured);

  // Any other program gets numbers.
  EXPECT_FALSE(make_plan(cpu_machine(2), Request{}).workers_measured);
}

TEST_P(CoresRule, WorkersAreCoresMinusTwoAndThreadsTakeTheRest) {
  const auto c = GetParam();
  const Plan p = make_plan(cpu_machine(c.cores), Request{});
  EXPECT_EQ(p.workers.value, c.workers);
  EXPECT_EQ(p.threads.value, c.threads);
  EXPECT_LE(p.workers.value + p.threads.value, std::max(2, c.cores)) << "oversubscribed";
  EXPECT_TRUE(contains(p.workers.reason, std::to_string(c.cores) + " usable core"))
      << p.workers.reason;
}

INSTANTIATE_TEST_SUITE_P(Table, CoresRule,
                         ::testing::Values(CoresCase{1, 1, 1}, CoresCase{2, 1, 1},
                                           CoresCase{3, 1, 2}, CoresCase{4, 2, 2},
                                           CoresCase{16, 14, 2}, CoresCase{64, 62, 2}));

TEST(PlanWorkers, SmallDataSetLoadsInTheMainProcess) {
  Request r;
  r.samples = Sourced<std::int64_t>{999, "--samples"};
  const Plan p = make_plan(cpu_machine(16), r);
  EXPECT_EQ(p.workers.value, 0);
  EXPECT_EQ(p.threads.value, 16);
  EXPECT_TRUE(contains(p.workers.reason, "999 samples < 1000"));

  r.samples->value = 1000;
  EXPECT_EQ(make_plan(cpu_machine(16), r).workers.value, 14);
}

TEST(PlanWorkers, NeverMoreWorkersThanBatchesPerEpoch) {
  Request r;
  r.samples = Sourced<std::int64_t>{5000, "--samples"};
  r.batch_size.value = 1024;
  const Plan p = make_plan(cpu_machine(64), r);
  EXPECT_EQ(p.workers.value, 4);
  EXPECT_TRUE(contains(p.workers.reason, "4 batches per epoch"));
}

TEST(PlanWorkers, CappedByMemoryForPythonWorkers) {
  Facts f = cpu_machine(64);
  f.memory.usable = 8ull << 30;  // 2 GiB loader budget, 512 MiB+ per Python worker
  Request r;
  r.shm_batches = true;
  r.batch_size.value = 1;
  r.sample_bytes.value = 1024;
  const Plan p = make_plan(f, r);
  EXPECT_EQ(p.workers.value, 3);
  EXPECT_TRUE(contains(p.workers.reason, "1/4 of usable RAM")) << p.workers.reason;
}

TEST(PlanWorkers, CappedBySharedMemoryForPythonBatches) {
  Facts f = cpu_machine(16);
  f.shm = {true, 64ull << 20, 64ull << 20};
  Request r;
  r.shm_batches = true;
  r.batch_size.value = 64;
  r.sample_bytes.value = 3 * 224 * 224 * 4;  // 36.8 MiB a batch: none fits in 32 MiB
  const Plan p = make_plan(f, r);
  EXPECT_EQ(p.workers.value, 0);
  EXPECT_TRUE(contains(p.workers.reason, "/dev/shm"));
  EXPECT_EQ(p.threads.value, 16);

  r.sample_bytes.value = 1 * 28 * 28 * 4;  // 392 KiB batches: plenty fit
  EXPECT_EQ(make_plan(f, r).workers.value, 14);
}

TEST(PlanWorkers, SharedMemoryDoesNotCapThreadLoaders) {
  Facts f = cpu_machine(16);
  f.shm = {true, 64ull << 20, 64ull << 20};
  Request r;  // dl-train: threads share the address space, nothing goes through /dev/shm
  EXPECT_EQ(make_plan(f, r).workers.value, 14);
}

TEST(PlanWorkers, UserValueWinsAndOversubscriptionIsWarned) {
  Request r;
  r.workers = Sourced<int>{8, "--workers"};
  const Plan p = make_plan(cpu_machine(4), r);
  EXPECT_EQ(p.workers.value, 8);
  EXPECT_EQ(p.workers.reason, "from --workers");
  EXPECT_EQ(p.threads.value, 1);
  EXPECT_TRUE(any_warning(p, "oversubscribe"));
}

TEST(PlanThreads, UserValueWinsAndCompetitionIsWarned) {
  Request r;
  r.threads = Sourced<int>{4, "DL_THREADS"};
  const Plan p = make_plan(cpu_machine(4), r);
  EXPECT_EQ(p.threads.value, 4);
  EXPECT_EQ(p.threads.reason, "from DL_THREADS");
  EXPECT_TRUE(any_warning(p, "compete"));
}

TEST(PlanShm, DockerDefaultWarnsWithTheFix) {
  Facts f = cpu_machine(4);
  f.shm = {true, 64ull << 20, 64ull << 20};
  const Plan p = make_plan(f, Request{});
  EXPECT_TRUE(any_warning(p, "shm_size"));
  EXPECT_TRUE(any_warning(p, "ipc: host"));
  f.shm = {true, 8ull << 30, 8ull << 30};
  EXPECT_FALSE(any_warning(make_plan(f, Request{}), "shm_size"));
}

TEST(PlanDevice, CpuWithoutGpuIsFp32) {
  const Plan p = make_plan(cpu_machine(4), Request{});
  EXPECT_EQ(p.device.value, "cpu");
  EXPECT_EQ(p.precision.value, "fp32");
  EXPECT_TRUE(contains(p.device.reason, "no GPU"));
}

TEST(PlanDevice, PreAmpereGpuGetsFp16) {
  const Plan p = make_plan(gpu_machine(7, 5), Request{});
  EXPECT_EQ(p.device.value, "cuda:0");
  EXPECT_EQ(p.precision.value, "fp16");
  EXPECT_TRUE(contains(p.precision.reason, "7.5 < 8.0"));
}

TEST(PlanDevice, AmpereAndLaterGetBf16) {
  EXPECT_EQ(make_plan(gpu_machine(8, 0), Request{}).precision.value, "bf16");
  EXPECT_EQ(make_plan(gpu_machine(9, 0), Request{}).precision.value, "bf16");
}

TEST(PlanDevice, ExplicitGpuIndexAndCpu) {
  Request r;
  r.device = {"cuda:1", "--device"};
  EXPECT_EQ(make_plan(gpu_machine(8, 0), r).device.value, "cuda:1");
  r.device = {"cpu", "--device"};
  const Plan p = make_plan(gpu_machine(8, 0), r);
  EXPECT_EQ(p.device.value, "cpu");
  EXPECT_EQ(p.precision.value, "fp32");
}

TEST(PlanDevice, CudaWithoutGpuIsRefused) {
  Request r;
  r.device = {"cuda", "--device"};
  try {
    make_plan(cpu_machine(4), r);
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.code(), exit_code::kUnavailable);
    EXPECT_TRUE(contains(e.what(), "--device"));
  }
  r.device = {"cuda:2", "--device"};
  EXPECT_THROW(make_plan(gpu_machine(8, 0), r), UserError);
}

TEST(PlanPrecision, Fp16OnCpuIsRefused) {
  Request r;
  r.precision = {"fp16", "--precision"};
  try {
    make_plan(cpu_machine(4), r);
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.code(), exit_code::kUsage);
    EXPECT_TRUE(contains(e.what(), "--precision"));
  }
}

TEST(PlanPrecision, Bf16OnCpuIsAllowedAndBf16OnOldGpuWarns) {
  Request r;
  r.precision = {"bf16", "--precision"};
  EXPECT_EQ(make_plan(cpu_machine(4), r).precision.value, "bf16");
  const Plan p = make_plan(gpu_machine(7, 0), r);
  EXPECT_EQ(p.precision.value, "bf16");
  EXPECT_TRUE(any_warning(p, "emulated"));
}

TEST(PlanBatch, FromTheRequestWithItsSource) {
  Request r;
  r.batch_size = {256, "/ws/dl.conf: batch-size"};
  const Plan p = make_plan(cpu_machine(4), r);
  EXPECT_EQ(p.batch_size.value, 256);
  EXPECT_EQ(p.batch_size.reason, "from /ws/dl.conf: batch-size");
}

TEST(Plan, IsAPureFunction) {
  const Facts f = gpu_machine(8, 6);
  Request r;
  r.samples = Sourced<std::int64_t>{50000, "--samples"};
  const Plan a = make_plan(f, r);
  const Plan b = make_plan(f, r);
  EXPECT_EQ(a.workers.value, b.workers.value);
  EXPECT_EQ(a.workers.reason, b.workers.reason);
  EXPECT_EQ(a.precision.reason, b.precision.reason);
  EXPECT_EQ(a.warnings, b.warnings);
}

// --- Several ranks ------------------------------------------------------------------------------

TEST(PlanRanks, OneRankKeepsTheWholeMachine) {
  const Plan p = make_plan(cpu_machine(8), Request{});
  ASSERT_EQ(p.ranks.size(), 1u);
  EXPECT_EQ(p.ranks[0].cores.value, 8);
  EXPECT_EQ(p.ranks[0].workers.value, p.workers.value);
  EXPECT_EQ(p.topology.world_size.value, 1);
  EXPECT_EQ(p.global_batch.value, 64);
  // A program after -- (the default Request) has a learning rate of its own: a factor for it.
  EXPECT_EQ(p.learning_rate.value, "x1");
}

TEST(PlanRanks, LocalRanksSplitTheCoresAndPlanFromTheirShare) {
  Request r;
  r.ranks.nproc_per_node = {"3", "--nproc-per-node"};
  const Plan p = make_plan(cpu_machine(8), r);
  ASSERT_EQ(p.ranks.size(), 3u);
  EXPECT_EQ(p.ranks[0].cores.value, 3);
  EXPECT_EQ(p.ranks[1].cores.value, 3);
  EXPECT_EQ(p.ranks[2].cores.value, 2);
  // Workers: share - 2, at least 1; threads: what the workers leave.
  EXPECT_EQ(p.ranks[0].workers.value, 1);
  EXPECT_EQ(p.ranks[0].threads.value, 2);
  EXPECT_EQ(p.ranks[2].threads.value, 1);
  EXPECT_EQ(p.workers.value, p.ranks[0].workers.value);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(p.ranks[i].global_rank, i);
    EXPECT_EQ(p.ranks[i].device, "cpu");
  }
  EXPECT_EQ(p.global_batch.value, 3 * 64);
}

TEST(PlanRanks, MoreRanksThanCoresIsAWarning) {
  Request r;
  r.ranks.nproc_per_node = {"4", "--nproc-per-node"};
  const Plan p = make_plan(cpu_machine(2), r);
  EXPECT_EQ(p.ranks[3].cores.value, 1);
  EXPECT_TRUE(any_warning(p, "oversubscribed"));
}

TEST(PlanRanks, OneProcessPerGpuForDlTrain) {
  Request r;
  r.default_program = true;
  const Plan p = make_plan(gpu_machine(8, 0), r);
  ASSERT_EQ(p.ranks.size(), 2u);
  EXPECT_EQ(p.ranks[1].device, "cuda:1");
  EXPECT_EQ(p.ranks[1].cores.value, 8);
}

TEST(PlanRanks, LearningRateRules) {
  Request r;
  r.default_program = true;
  r.ranks.nproc_per_node = {"4", "--nproc-per-node"};
  r.lr = {0.002, "--lr"};
  EXPECT_EQ(make_plan(cpu_machine(8), r).learning_rate.value, "0.002");
  EXPECT_TRUE(contains(make_plan(cpu_machine(8), r).learning_rate.reason, "kept"));
  r.lr_scaling = {"linear", "--lr-scaling"};
  EXPECT_EQ(make_plan(cpu_machine(8), r).learning_rate.value, "0.008");
  r.lr_scaling = {"sqrt", "--lr-scaling"};
  EXPECT_EQ(make_plan(cpu_machine(8), r).learning_rate.value, "0.004");
}

// --reference-batch: the rate follows the global batch (the searched or given batch x the ranks)
// from the batch --lr was tuned for, and says so; under --lr-scaling none it is not used, and
// the plan warns rather than ignore it silently.
TEST(PlanRanks, LearningRateFollowsTheGlobalBatchFromTheReferenceBatch) {
  Request r;
  r.default_program = true;
  r.batch_size = {320, "--batch-size"};
  r.lr = {0.001, "--lr"};
  r.reference_batch = Sourced<std::int64_t>{64, "--reference-batch"};
  r.lr_scaling = {"linear", "--lr-scaling"};
  const Plan linear = make_plan(cpu_machine(8), r);
  EXPECT_EQ(linear.learning_rate.value, "0.005");
  EXPECT_TRUE(contains(linear.learning_rate.reason, "320/64")) << linear.learning_rate.reason;
  EXPECT_TRUE(contains(linear.learning_rate.reason, "--reference-batch 64"))
      << linear.learning_rate.reason;
  r.lr_scaling = {"sqrt", "--lr-scaling"};
  r.batch_size = {256, "--batch-size"};
  EXPECT_EQ(make_plan(cpu_machine(8), r).learning_rate.value, "0.002");
  // Two ranks of 128 against 64: the global batch 256 counts, not one rank's.
  r.ranks.nproc_per_node = {"2", "--nproc-per-node"};
  r.batch_size = {128, "--batch-size"};
  EXPECT_EQ(make_plan(cpu_machine(8), r).learning_rate.value, "0.002");
  // Equal batches: kept, and the reason says why.
  r.reference_batch = Sourced<std::int64_t>{256, "--reference-batch"};
  const Plan same = make_plan(cpu_machine(8), r);
  EXPECT_EQ(same.learning_rate.value, "0.001");
  EXPECT_TRUE(contains(same.learning_rate.reason, "scales it by 1")) << same.learning_rate.reason;

  r.lr_scaling = {"none", "default"};
  const Plan unused = make_plan(cpu_machine(8), r);
  EXPECT_EQ(unused.learning_rate.value, "0.001");
  ASSERT_FALSE(unused.warnings.empty());
  EXPECT_TRUE(contains(unused.warnings.back(), "--reference-batch 256 is not used"))
      << unused.warnings.back();
}

// A program after -- scales its own learning rate: the plan gives the factor (plan.json's
// lr_factor too), which dl_plan's plan.scaled_lr applies, not dl-train's --lr scaled.
TEST(PlanRanks, AProgramAfterDashDashGetsTheFactorForItsOwnRate) {
  Request r;
  r.batch_size = {128, "--batch-size"};
  r.lr = {0.01, "--lr"};
  r.reference_batch = Sourced<std::int64_t>{32, "--reference-batch"};
  r.lr_scaling = {"linear", "--lr-scaling"};
  const Plan p = make_plan(cpu_machine(8), r);
  EXPECT_EQ(p.learning_rate.value, "x4");
  EXPECT_DOUBLE_EQ(p.lr_factor, 4.0);
  EXPECT_TRUE(contains(p.learning_rate.reason, "the program's learning rate x 128/32"))
      << p.learning_rate.reason;
  EXPECT_TRUE(contains(p.learning_rate.reason, "plan.scaled_lr")) << p.learning_rate.reason;
  EXPECT_FALSE(contains(p.learning_rate.reason, "0.01")) << "dl-train's --lr is not the program's";
}

// --resume of dl-train: the run's rate from last.json, whatever the rule would give now.
TEST(PlanRanks, AResumedRunShowsTheRateDlTrainKeeps) {
  Request r;
  r.default_program = true;
  r.batch_size = {128, "--batch-size"};
  r.reference_batch = Sourced<std::int64_t>{16, "--reference-batch"};
  r.lr_scaling = {"linear", "--lr-scaling"};
  r.resumed_lr = Sourced<double>{0.004, "--resume: runs/lin/last.json"};
  const Plan p = make_plan(cpu_machine(8), r);
  EXPECT_EQ(p.learning_rate.value, "0.004") << "not 0.008, which dl-train would not train at";
  EXPECT_TRUE(contains(p.learning_rate.reason, "kept from --resume: runs/lin/last.json"))
      << p.learning_rate.reason;
  EXPECT_TRUE(p.learning_rate_asked);
}

}  // namespace
}  // namespace dl::test

namespace dl::test {
namespace {

// A batch whose samples alone cannot fit the RAM is refused from the plan, with the numbers,
// instead of the OOM killer ending the run mid-epoch.
TEST(PlanMemory, BatchesInFlightBeyondTheRamAreRefused) {
  Facts f = cpu_machine(4);
  f.memory.usable = 8ull << 30;
  Request r;
  r.batch_size = {1 << 20, "--batch-size"};
  r.workers = Sourced<int>{2, "--workers"};
  r.sample_bytes = {3 * 32 * 32 * 4, "CIFAR-10"};  // 12 KiB: 12 GiB a batch
  try {
    make_plan(f, r);
    FAIL() << "planned a batch that cannot fit";
  } catch (const UserError& e) {
    EXPECT_EQ(e.code(), exit_code::kUnavailable);
    const std::string m = e.what();
    EXPECT_TRUE(contains(m, "batch 1048576 with 2 worker(s) needs 6 batches in flight")) << m;
    EXPECT_TRUE(contains(m, "more than the usable RAM (8.0 GiB)")) << m;
    EXPECT_TRUE(contains(m, "lower --batch-size or --workers")) << m;
  }
}

TEST(PlanMemory, FittingBatchesAndAssumedSizesAreNotRefused) {
  Facts f = cpu_machine(4);
  f.memory.usable = 8ull << 30;
  Request r;
  r.batch_size = {256, "--batch-size"};
  r.sample_bytes = {3 * 32 * 32 * 4, "CIFAR-10"};
  EXPECT_NO_THROW(make_plan(f, r));
  // Without a known sample size the same huge batch is a warning: the size is only assumed.
  Request assumed;
  assumed.batch_size = {1 << 20, "--batch-size"};
  const Plan p = make_plan(f, assumed);
  ASSERT_FALSE(p.warnings.empty());
  EXPECT_TRUE(contains(p.warnings.back(), "training may be killed for memory"));
}

// --global-batch (core/accumulation.h) in the plan and the program's environment.
Request global_request(std::int64_t global, int batch, const std::string& nproc = "1") {
  Request r;
  r.default_program = true;
  r.global_batch = Sourced<std::int64_t>{global, "--global-batch"};
  r.batch_size = {batch, "--batch-size"};
  r.ranks.nproc_per_node = {nproc, "--nproc-per-node"};
  return r;
}

TEST(PlanGlobalBatch, KeepsTheRecipesBatchAcrossRanks) {
  const Plan one = make_plan(cpu_machine(4), global_request(256, 64));
  ASSERT_TRUE(one.accumulation);
  EXPECT_EQ(one.batch_size.value, 256) << "the loader's batch is the rank's share";
  EXPECT_EQ(one.accumulation->micro, 64);
  EXPECT_EQ(one.accumulation->steps, 4);
  EXPECT_EQ(one.global_batch.value, 256);
  EXPECT_TRUE(contains(one.batch_size.reason, "--global-batch 256")) << one.batch_size.reason;
  EXPECT_TRUE(contains(one.global_batch.reason, "4 micro-batches of at most 64"))
      << one.global_batch.reason;

  const Plan two = make_plan(cpu_machine(4), global_request(256, 64, "2"));
  ASSERT_TRUE(two.accumulation);
  EXPECT_EQ(two.batch_size.value, 128);
  EXPECT_EQ(two.accumulation->steps, 2);
  EXPECT_EQ(two.global_batch.value, 256) << "the same batch per optimizer step on 2 ranks";

  Request scaled = global_request(256, 64, "2");
  scaled.lr = {0.001, "--lr"};
  scaled.lr_scaling = {"linear", "--lr-scaling"};
  const Plan kept = make_plan(cpu_machine(4), scaled);
  EXPECT_EQ(kept.learning_rate.value, "0.001") << "the batch did not grow with the ranks";
  EXPECT_TRUE(contains(kept.learning_rate.reason, "--global-batch")) << kept.learning_rate.reason;
  // Tuned at 128, kept at 256: the reference batch still scales it.
  scaled.reference_batch = Sourced<std::int64_t>{128, "--reference-batch"};
  EXPECT_EQ(make_plan(cpu_machine(4), scaled).learning_rate.value, "0.002");
}

TEST(PlanGlobalBatch, UnsetKeepsBatchTimesRanks) {
  Request r = global_request(256, 64, "2");
  r.global_batch.reset();
  const Plan p = make_plan(cpu_machine(4), r);
  EXPECT_FALSE(p.accumulation);
  EXPECT_EQ(p.batch_size.value, 64);
  EXPECT_EQ(p.global_batch.value, 128);
}

TEST(PlanGlobalBatch, NotAMultipleOfTheRanksIsAUsageError) {
  try {
    make_plan(cpu_machine(4), global_request(255, 64, "2"));
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.code(), exit_code::kUsage);
    EXPECT_TRUE(contains(e.what(), "--global-batch 255")) << e.what();
  }
}

TEST(PlanGlobalBatch, ProgramAfterDashDashIsWarnedItMustSplit) {
  Request r = global_request(256, 64);
  r.default_program = false;
  const Plan p = make_plan(cpu_machine(4), r);
  bool warned = false;
  for (const auto& w : p.warnings) warned = warned || contains(w, "DL_MICRO_BATCH=64");
  EXPECT_TRUE(warned);
  // dl-train splits them itself, and so does a script that calls plan.micro_batches: no warning.
  for (const auto& w : make_plan(cpu_machine(4), global_request(256, 64)).warnings) {
    EXPECT_FALSE(contains(w, "DL_MICRO_BATCH")) << w;
  }
  r.program_splits_batches = true;
  for (const auto& w : make_plan(cpu_machine(4), r).warnings) {
    EXPECT_FALSE(contains(w, "DL_MICRO_BATCH")) << w;
  }
}

TEST(LaunchEnvGlobalBatch, MicroBatchOnlyWhereABatchIsSplit) {
  Launch l;
  l.workspace = "/ws";
  l.run_dir = "/ws/runs/r";
  l.plan = make_plan(cpu_machine(4), global_request(256, 64));
  const auto none = [](const char*) { return std::optional<std::string>{}; };
  std::map<std::string, std::string> env;
  for (const auto& [k, v] : child_environment(l, none)) env[k] = v;
  EXPECT_EQ(env.at("DL_BATCH_SIZE"), "256");
  EXPECT_EQ(env.at("DL_MICRO_BATCH"), "64");
  EXPECT_EQ(env.at("DL_GLOBAL_BATCH"), "256") << "dl-train then keeps --lr whatever the ranks";

  l.plan = make_plan(cpu_machine(4), global_request(64, 64));
  env.clear();
  for (const auto& [k, v] : child_environment(l, none)) env[k] = v;
  EXPECT_EQ(env.at("DL_BATCH_SIZE"), "64");
  EXPECT_EQ(env.count("DL_MICRO_BATCH"), 0u) << "a batch that runs whole leaves it unset";
}

}  // namespace
}  // namespace dl::test
