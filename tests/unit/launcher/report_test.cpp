// The report (launcher/report.h) of a launch built here: the --dry-run table shows every value with
// its reason, the machine's facts and the run, and the JSON of --json and plan.json carries the
// same members (read back with the project's JSON reader).
#include "launcher/report.h"

#include <gtest/gtest.h>

#include <string>

#include "core/json.h"
#include "support/matchers.h"

namespace dl::test {
namespace {

constexpr std::uint64_t kGiB = 1ull << 30;

// One GPU, 3 usable cores, a config file, two variables for the program and one warning.
Launch gpu_launch() {
  Launch l;
  l.facts.cpu.online = 8;
  l.facts.cpu.affinity = 4;
  l.facts.cpu.quota = 3.0;
  l.facts.cpu.usable = 3;
  l.facts.cpu.usable_reason = "cgroup quota 3 cores";
  l.facts.memory.total = 16 * kGiB;
  l.facts.memory.available = 12 * kGiB;
  l.facts.memory.cgroup_limit = 8 * kGiB;
  l.facts.memory.usable = 6 * kGiB;
  l.facts.memory.usable_reason = "cgroup limit less usage";
  l.facts.shm = {true, 2 * kGiB, 1 * kGiB};
  l.facts.cgroup_version = 2;
  l.facts.gpu.available = true;
  l.facts.gpu.note = "NVML 12.535";
  l.facts.gpu.driver_version = "535.54.03";
  l.facts.gpu.cuda_driver_version = 12020;
  l.facts.gpu.gpus = {{0, "Tesla T4", 16 * kGiB, 15 * kGiB, 7, 5}};
  l.plan.device = {"cuda:0", "the only GPU"};
  l.plan.precision = {"fp16", "compute capability 7.5: no bf16"};
  l.plan.workers = {2, "3 usable cores less the trainer"};
  l.plan.threads = {1, "what the workers leave"};
  l.plan.batch_size = {128, "--batch-size"};
  l.plan.warnings = {"/dev/shm is small"};
  l.request.samples = Sourced<std::int64_t>{60000, "--samples"};
  l.workspace = "/ws";
  l.config_file = "/ws/dl.conf";
  l.run_name = "r1";
  l.run_dir = "/ws/runs/r1";
  l.command = {"/usr/bin/dl-train", "--epochs", "3"};
  l.env = {{"DL_DEVICE", "cuda:0"}, {"DL_WORKERS", "2"}};
  return l;
}

// The member `path_text` ("a.b.c") of `root`; fails the test when one is missing. A `const char*`,
// not a string: GCC 14 takes a temporary string argument for what the result may refer to
// (-Wdangling-reference).
const JsonValue& at(const JsonValue& root, const char* path_text) {
  const std::string path = path_text;
  const JsonValue* v = &root;
  std::string::size_type start = 0;
  while (start <= path.size()) {
    const auto dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? dot : dot - start);
    v = v->find(key);
    if (v == nullptr) throw std::runtime_error("no member " + path);
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return *v;
}

TEST(ReportText, EveryPlanValueHasItsReason) {
  const std::string text = render_text(gpu_launch(), false);
  EXPECT_THAT(text, HasSubstr("\nplan\n"));
  EXPECT_THAT(text, HasSubstr("  device     cuda:0    (the only GPU)\n"));
  EXPECT_THAT(text, HasSubstr("  precision  fp16      (compute capability 7.5: no bf16)\n"));
  EXPECT_THAT(text, HasSubstr("  workers    2         (3 usable cores less the trainer)\n"));
  EXPECT_THAT(text, HasSubstr("  threads    1         (what the workers leave)\n"));
  EXPECT_THAT(text, HasSubstr("  batch      128       (--batch-size)\n"));
  EXPECT_THAT(text, HasSubstr("  data       60000     (samples from --samples; "));
}

TEST(ReportText, MachineFactsAndGpus) {
  const std::string text = render_text(gpu_launch(), false);
  EXPECT_THAT(text, StartsWith("machine\n"));
  EXPECT_THAT(text, HasSubstr("  cpu        3 usable  (cgroup quota 3 cores)\n"));
  EXPECT_THAT(text, HasSubstr("(cgroup limit less usage; cgroup limit "));
  EXPECT_THAT(text, HasSubstr("  gpu        1  (driver 535.54.03, CUDA 12.2)\n"));
  EXPECT_THAT(text, HasSubstr("    cuda:0  Tesla T4, "));
  EXPECT_THAT(text, HasSubstr("compute capability 7.5\n"));
}

TEST(ReportText, RunSectionAndWarnings) {
  Launch l = gpu_launch();
  // Another program writes no report: the line is dl-train's.
  EXPECT_THAT(render_text(l, false), Not(HasSubstr("report.html")));
  l.request.default_program = true;
  const std::string text = render_text(l, false);
  EXPECT_THAT(text, HasSubstr("\nrun\n  command    /usr/bin/dl-train --epochs 3\n"));
  EXPECT_THAT(text, HasSubstr("  workspace  /ws\n"));
  EXPECT_THAT(text, HasSubstr("  config     /ws/dl.conf\n"));
  EXPECT_THAT(text, HasSubstr("  run dir    /ws/runs/r1\n"));
  EXPECT_THAT(text, HasSubstr("  report     /ws/runs/r1/report.html  (dl-train rewrites it"));
  EXPECT_THAT(text, Not(HasSubstr("dry run")));
  EXPECT_THAT(text, Not(HasSubstr("  user ")));  // no run_as: the launcher's own user
  EXPECT_THAT(text, HasSubstr("\nwarnings\n  ! /dev/shm is small\n"));
  // dl-train's evaluate and predict write no report.html.
  for (const char* word : {"evaluate", "predict"}) {
    l.command = {"/usr/bin/dl-train", word, "--checkpoint", "/ws/runs/r1/best.pt"};
    EXPECT_THAT(render_text(l, false), Not(HasSubstr("report.html"))) << word;
  }
}

TEST(ReportText, DryRunSaysTheRunDirectoryIsNotCreated) {
  const std::string text = render_text(gpu_launch(), true);
  EXPECT_THAT(text, HasSubstr("  run dir    /ws/runs/r1  (not created: dry run)\n"));
  EXPECT_THAT(text, Not(HasSubstr("report.html")));
}

// One rank shows the learning rate only where a rule or a reference batch was asked for.
TEST(ReportText, OneRankShowsTheLearningRateWhenAskedToScaleIt) {
  Launch l = gpu_launch();
  l.plan.learning_rate = {"0.005", "--lr-scaling linear (from --lr-scaling): lr 0.001 x 320/64"};
  EXPECT_THAT(render_text(l, false), Not(HasSubstr("\n  lr ")));
  l.plan.learning_rate_asked = true;
  EXPECT_THAT(render_text(l, false),
              HasSubstr("\n  lr         0.005     (--lr-scaling linear (from --lr-scaling)"));
}

TEST(ReportText, CpuMachineWithMeasuredWorkersAndUnknownData) {
  Launch l = gpu_launch();
  l.facts.gpu = GpuReport{false, "NVML not found", "", 0, {}};
  l.facts.shm.present = false;
  l.plan.device = {"cpu", "no GPU"};
  l.plan.workers_measured = true;
  l.plan.threads_measured = true;
  l.plan.warnings.clear();
  l.request.samples.reset();
  l.config_file.reset();
  const std::string text = render_text(l, false);
  EXPECT_THAT(text, HasSubstr("  gpu        none  (NVML not found)\n"));
  EXPECT_THAT(text, HasSubstr("  /dev/shm   missing\n"));
  EXPECT_THAT(text, HasSubstr("  workers    auto      (3 usable cores less the trainer)\n"));
  EXPECT_THAT(text, HasSubstr("  threads    auto      (what the workers leave)\n"));
  EXPECT_THAT(text, HasSubstr("  data       unknown   (size not given: --samples; "));
  EXPECT_THAT(text, Not(HasSubstr("  config ")));
  EXPECT_THAT(text, Not(HasSubstr("warnings")));
}

TEST(ReportJson, PlanMembersCarryValuesAndReasons) {
  std::string error;
  const auto json = parse_json(render_json(gpu_launch()), &error);
  ASSERT_TRUE(json) << error;
  EXPECT_EQ(at(*json, "format").as_string(), "dl-launch-plan");
  EXPECT_EQ(at(*json, "version").as_i64(), 1);
  EXPECT_EQ(at(*json, "plan.device.value").as_string(), "cuda:0");
  EXPECT_EQ(at(*json, "plan.device.reason").as_string(), "the only GPU");
  EXPECT_EQ(at(*json, "plan.precision.value").as_string(), "fp16");
  EXPECT_EQ(at(*json, "plan.workers.value").as_i64(), 2);
  EXPECT_EQ(at(*json, "plan.workers.reason").as_string(), "3 usable cores less the trainer");
  EXPECT_EQ(at(*json, "plan.threads.value").as_i64(), 1);
  EXPECT_EQ(at(*json, "plan.workers_measured").as_bool(), false);
  EXPECT_EQ(at(*json, "plan.batch_size.value").as_i64(), 128);
  EXPECT_EQ(at(*json, "plan.batch_size.reason").as_string(), "--batch-size");
  const JsonValue& warnings = at(*json, "plan.warnings");
  ASSERT_TRUE(warnings.is_array());
  ASSERT_EQ(warnings.items().size(), 1u);
  EXPECT_EQ(warnings.items()[0].as_string(), "/dev/shm is small");
  EXPECT_EQ(at(*json, "batch_search").type(), JsonValue::Type::kNull);
}

TEST(ReportJson, FactsAndDevices) {
  const auto json = parse_json(render_json(gpu_launch()));
  ASSERT_TRUE(json);
  EXPECT_EQ(at(*json, "facts.cpu.online").as_i64(), 8);
  EXPECT_EQ(at(*json, "facts.cpu.affinity").as_i64(), 4);
  EXPECT_EQ(at(*json, "facts.cpu.cgroup_quota").as_double(), 3.0);
  EXPECT_EQ(at(*json, "facts.cpu.usable").as_i64(), 3);
  EXPECT_EQ(at(*json, "facts.cpu.reason").as_string(), "cgroup quota 3 cores");
  EXPECT_EQ(at(*json, "facts.memory.cgroup_limit_bytes").as_u64(), 8 * kGiB);
  EXPECT_EQ(at(*json, "facts.memory.usable_bytes").as_u64(), 6 * kGiB);
  EXPECT_EQ(at(*json, "facts.shm.present").as_bool(), true);
  EXPECT_EQ(at(*json, "facts.cgroup_version").as_i64(), 2);
  EXPECT_EQ(at(*json, "facts.gpu.driver_version").as_string(), "535.54.03");
  EXPECT_EQ(at(*json, "facts.gpu.driver_cuda").as_string(), "12.2");
  const JsonValue& devices = at(*json, "facts.gpu.devices");
  ASSERT_EQ(devices.items().size(), 1u);
  EXPECT_EQ(devices.items()[0].get_string("name", ""), "Tesla T4");
  EXPECT_EQ(devices.items()[0].get_u64("total_bytes", 0), 16 * kGiB);
  EXPECT_EQ(devices.items()[0].get_u64("free_bytes", 0), 15 * kGiB);
  EXPECT_EQ(devices.items()[0].get_string("compute_capability", ""), "7.5");
}

TEST(ReportJson, RunCommandAndEnvironment) {
  const auto json = parse_json(render_json(gpu_launch()));
  ASSERT_TRUE(json);
  EXPECT_EQ(at(*json, "workspace").as_string(), "/ws");
  EXPECT_EQ(at(*json, "config_file").as_string(), "/ws/dl.conf");
  EXPECT_EQ(at(*json, "run_name").as_string(), "r1");
  EXPECT_EQ(at(*json, "run_dir").as_string(), "/ws/runs/r1");
  EXPECT_EQ(at(*json, "run_as").type(), JsonValue::Type::kNull);
  const JsonValue& command = at(*json, "command");
  ASSERT_EQ(command.items().size(), 3u);
  EXPECT_EQ(command.items()[0].as_string(), "/usr/bin/dl-train");
  EXPECT_EQ(command.items()[2].as_string(), "3");
  const JsonValue& env = at(*json, "env");
  ASSERT_EQ(env.members().size(), 2u);
  EXPECT_EQ(env.members()[0].first, "DL_DEVICE");
  EXPECT_EQ(env.get_string("DL_WORKERS", ""), "2");
}

TEST(ReportJson, AbsentValuesAreNullAndNoGpuMeansNoDevices) {
  Launch l = gpu_launch();
  l.facts.cpu.affinity.reset();
  l.facts.cpu.quota.reset();
  l.facts.memory.cgroup_limit.reset();
  l.facts.gpu = GpuReport{false, "NVML not found", "", 0, {}};
  l.config_file.reset();
  const auto json = parse_json(render_json(l));
  ASSERT_TRUE(json);
  EXPECT_EQ(at(*json, "facts.cpu.affinity").type(), JsonValue::Type::kNull);
  EXPECT_EQ(at(*json, "facts.cpu.cgroup_quota").type(), JsonValue::Type::kNull);
  EXPECT_EQ(at(*json, "facts.memory.cgroup_limit_bytes").type(), JsonValue::Type::kNull);
  EXPECT_EQ(at(*json, "facts.gpu.driver_cuda").type(), JsonValue::Type::kNull);
  EXPECT_EQ(at(*json, "facts.gpu.note").as_string(), "NVML not found");
  EXPECT_TRUE(at(*json, "facts.gpu.devices").items().empty());
  EXPECT_EQ(at(*json, "config_file").type(), JsonValue::Type::kNull);
}

TEST(ReportJson, BatchSearchWithItsTrials) {
  Launch l = gpu_launch();
  BatchSearchRecord s;
  s.result.batch = 96;
  s.result.reason = "largest multiple of 8 within the budget";
  s.result.trials = {
      {8, false, 2 * kGiB, 0.01, ""}, {32, false, 4 * kGiB, 0.02, ""}, {128, true, 0, 0, ""}};
  s.result.choice = choose_batch(s.result.trials, 6 * kGiB, BatchObjective::kFastest, 0.05);
  s.budget = 6 * kGiB;
  s.budget_reason = "--memory-budget";
  s.cache_file = "/ws/.dl/batch-cache";
  s.cache_written = true;
  l.plan.batch_search = s;
  const auto json = parse_json(render_json(l));
  ASSERT_TRUE(json);
  EXPECT_EQ(at(*json, "batch_search.batch").as_i64(), 96);
  EXPECT_EQ(at(*json, "batch_search.budget_bytes").as_u64(), 6 * kGiB);
  EXPECT_EQ(at(*json, "batch_search.cached").as_bool(), false);
  EXPECT_EQ(at(*json, "batch_search.cache_written").as_bool(), true);
  const JsonValue& trials = at(*json, "batch_search.trials");
  ASSERT_EQ(trials.items().size(), 3u);
  EXPECT_EQ(trials.items()[0].get_bool("fits", false), true);
  EXPECT_EQ(trials.items()[2].get_bool("fits", true), false);
  EXPECT_EQ(trials.items()[2].get_bool("out_of_memory", false), true);
  EXPECT_DOUBLE_EQ(trials.items()[1].get_double("samples_per_second", 0), 1600.0);
  EXPECT_EQ(at(*json, "batch_search.objective").as_string(), "fastest");
  EXPECT_EQ(at(*json, "batch_search.largest").as_i64(), 32);
  EXPECT_EQ(at(*json, "batch_search.fastest").as_i64(), 32);
  EXPECT_DOUBLE_EQ(at(*json, "batch_search.best_samples_per_second").as_double().value_or(0),
                   1600.0);
  EXPECT_THAT(at(*json, "batch_search.why").as_string().value_or(""),
              HasSubstr("the best rate measured"));

  const std::string text = render_text(l, false);
  EXPECT_THAT(text, HasSubstr("batch search  fastest batch within "));
  EXPECT_THAT(text, HasSubstr("step       samples/s\n"));
  EXPECT_THAT(text, HasSubstr("0.020 s    1600\n"));
  EXPECT_THAT(text, HasSubstr("  chosen: the largest that fits, 1600 samples/s, the best rate"));
  EXPECT_THAT(text, HasSubstr("(--memory-budget)"));
  EXPECT_THAT(text, HasSubstr("  -> 96: 3 probes in "));
  EXPECT_THAT(text, HasSubstr("stored in /ws/.dl/batch-cache\n"));
}

}  // namespace
}  // namespace dl::test
