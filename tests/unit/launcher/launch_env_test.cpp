// The environment contract: DL_* from the plan, thread variables, and the torchrun variables with
// a scheduler's values kept.
#include <gtest/gtest.h>

#include <map>

#include "launcher/launch.h"

namespace dl::test {
namespace {

Launch sample_launch() {
  Launch l;
  l.workspace = "/ws";
  l.run_name = "r1";
  l.run_dir = "/ws/runs/r1";
  l.plan.device = {"cuda:0", ""};
  l.plan.precision = {"bf16", ""};
  l.plan.workers = {6, ""};
  l.plan.threads = {2, ""};
  l.plan.batch_size = {128, ""};
  return l;
}

std::map<std::string, std::string> as_map(const EnvList& env) {
  std::map<std::string, std::string> m;
  for (const auto& [k, v] : env) {
    EXPECT_TRUE(m.emplace(k, v).second) << "duplicate " << k;
  }
  return m;
}

TEST(LaunchEnv, PlanBecomesDlVariables) {
  const auto env = as_map(
      child_environment(sample_launch(), [](const char*) { return std::optional<std::string>{}; }));
  EXPECT_EQ(env.at("DL_WORKSPACE"), "/ws");
  EXPECT_EQ(env.at("DL_RUN_DIR"), "/ws/runs/r1");
  EXPECT_EQ(env.at("DL_RUN_NAME"), "r1");
  EXPECT_EQ(env.at("DL_PLAN"), "/ws/runs/r1/plan.json");
  EXPECT_EQ(env.at("DL_DEVICE"), "cuda:0");
  EXPECT_EQ(env.at("DL_PRECISION"), "bf16");
  EXPECT_EQ(env.at("DL_WORKERS"), "6");
  EXPECT_EQ(env.at("DL_THREADS"), "2");
  EXPECT_EQ(env.at("DL_BATCH_SIZE"), "128");
  EXPECT_EQ(env.at("OMP_NUM_THREADS"), "2");
  EXPECT_EQ(env.at("MKL_NUM_THREADS"), "2");
  EXPECT_EQ(env.at("RANK"), "0");
  EXPECT_EQ(env.at("LOCAL_RANK"), "0");
  EXPECT_EQ(env.at("WORLD_SIZE"), "1");
  EXPECT_EQ(env.at("LOCAL_WORLD_SIZE"), "1");
  EXPECT_EQ(env.at("MASTER_ADDR"), "127.0.0.1");
  EXPECT_EQ(env.at("MASTER_PORT"), "29500");
}

TEST(LaunchEnv, MeasuringTrainerGetsAutoAndTheCores) {
  Launch l = sample_launch();
  l.facts.cpu.usable = 12;
  l.plan.workers_measured = true;
  l.plan.threads_measured = true;
  const auto env =
      as_map(child_environment(l, [](const char*) { return std::optional<std::string>{}; }));
  EXPECT_EQ(env.at("DL_WORKERS"), "auto");
  EXPECT_EQ(env.at("DL_THREADS"), "auto");
  EXPECT_EQ(env.at("DL_CORES"), "12");
  // dl-train sets its own thread count; OpenMP must not hold it below the cores it may try.
  EXPECT_EQ(env.at("OMP_NUM_THREADS"), "12");
  // A plan with numbers (any other program) hands them over as they are.
  const auto fixed = as_map(
      child_environment(sample_launch(), [](const char*) { return std::optional<std::string>{}; }));
  EXPECT_EQ(fixed.at("DL_WORKERS"), "6");
  EXPECT_EQ(fixed.at("DL_CORES"), "1");
}

TEST(LaunchEnv, SchedulerAndUserSettingsAreKept) {
  const auto env = as_map(child_environment(sample_launch(), [](const char* name) {
    const std::map<std::string, std::string> outer = {
        {"RANK", "3"}, {"WORLD_SIZE", "8"}, {"MASTER_ADDR", "node0"}, {"OMP_NUM_THREADS", "5"}};
    const auto it = outer.find(name);
    return it == outer.end() ? std::optional<std::string>{} : it->second;
  }));
  EXPECT_EQ(env.at("RANK"), "3");
  EXPECT_EQ(env.at("WORLD_SIZE"), "8");
  EXPECT_EQ(env.at("MASTER_ADDR"), "node0");
  EXPECT_EQ(env.count("OMP_NUM_THREADS"), 0u);  // not overridden: the launcher's env passes it on
  EXPECT_EQ(env.at("MKL_NUM_THREADS"), "2");
}

}  // namespace
}  // namespace dl::test
