// The environment contract: DL_* from the plan, thread variables, and the torchrun variables with
// a scheduler's values kept.
#include <gtest/gtest.h>

#include <map>

#include "launcher/launch.h"
#include "launcher/plan.h"

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

TEST(LaunchEnv, UserThreadSettingsAreKept) {
  const auto env = as_map(child_environment(sample_launch(), [](const char* name) {
    return std::string(name) == "OMP_NUM_THREADS" ? std::optional<std::string>("5")
                                                  : std::optional<std::string>{};
  }));
  EXPECT_EQ(env.count("OMP_NUM_THREADS"), 0u);  // not overridden: the launcher's env passes it on
  EXPECT_EQ(env.at("MKL_NUM_THREADS"), "2");
}

// A program after -- finds the dl_plan beside this dl-launch before any other.
TEST(LaunchEnv, CompanionGoesFirstOnPythonPath) {
  Launch l = sample_launch();
  l.companion_dir = "/opt/dl/python";
  const auto alone =
      as_map(child_environment(l, [](const char*) { return std::optional<std::string>{}; }));
  EXPECT_EQ(alone.at("PYTHONPATH"), "/opt/dl/python");
  const auto users = as_map(child_environment(l, [](const char* name) {
    return std::string(name) == "PYTHONPATH" ? std::optional<std::string>("/a:/b")
                                             : std::optional<std::string>{};
  }));
  EXPECT_EQ(users.at("PYTHONPATH"), "/opt/dl/python:/a:/b");
  // An empty PYTHONPATH adds no empty entry (which Python would read as the current directory).
  const auto empty = as_map(child_environment(l, [](const char* name) {
    return std::string(name) == "PYTHONPATH" ? std::optional<std::string>("")
                                             : std::optional<std::string>{};
  }));
  EXPECT_EQ(empty.at("PYTHONPATH"), "/opt/dl/python");
}

TEST(LaunchEnv, NoCompanionLeavesPythonPathAlone) {
  const auto env = as_map(child_environment(sample_launch(), [](const char* name) {
    return std::string(name) == "PYTHONPATH" ? std::optional<std::string>("/a")
                                             : std::optional<std::string>{};
  }));
  EXPECT_EQ(env.count("PYTHONPATH"), 0u);  // dl-train's launch, or no companion found
}

// A plan for 2 GPUs x 2 nodes, this being node 1, made by the planner from the options.
Launch two_by_two() {
  Facts f;
  f.cpu.online = f.cpu.usable = 8;
  f.memory.total = f.memory.usable = 64ull << 30;
  f.shm = {true, 8ull << 30, 8ull << 30};
  f.gpu.available = true;
  for (int i = 0; i < 2; ++i) f.gpu.gpus.push_back({i, "GPU", 16ull << 30, 15ull << 30, 8, 0});
  Request r;
  r.default_program = true;
  r.batch_size = {32, "--batch-size"};
  r.ranks.nnodes = Sourced<int>{2, "--nnodes"};
  r.ranks.node_rank = Sourced<int>{1, "--node-rank"};
  r.ranks.master_addr = Sourced<std::string>{"10.0.0.1", "--master-addr"};
  Launch l = sample_launch();
  l.facts = f;
  l.request = r;
  l.plan = make_plan(f, r);
  return l;
}

TEST(LaunchEnv, EachRankGetsItsRanksDeviceAndShare) {
  const Launch l = two_by_two();
  ASSERT_EQ(l.plan.ranks.size(), 2u);
  const auto none = [](const char*) { return std::optional<std::string>{}; };
  for (std::size_t i = 0; i < 2; ++i) {
    const auto env = as_map(rank_environment(l, i, none));
    const std::string local = std::to_string(i);
    EXPECT_EQ(env.at("RANK"), std::to_string(2 + i));
    EXPECT_EQ(env.at("LOCAL_RANK"), local);
    EXPECT_EQ(env.at("WORLD_SIZE"), "4");
    EXPECT_EQ(env.at("LOCAL_WORLD_SIZE"), "2");
    EXPECT_EQ(env.at("GROUP_RANK"), "1");
    EXPECT_EQ(env.at("MASTER_ADDR"), "10.0.0.1");
    EXPECT_EQ(env.at("MASTER_PORT"), "29500");
    EXPECT_EQ(env.at("DL_DEVICE"), "cuda:" + local);
    EXPECT_EQ(env.at("DL_BATCH_SIZE"), "32");  // per rank
    EXPECT_EQ(env.at("DL_CORES"), "4");        // 8 cores, 2 ranks
    EXPECT_EQ(env.at("OMP_NUM_THREADS"), env.at("DL_THREADS"));
    // Not rank 0's node: its own plan file, which rank 0's never overwrites.
    EXPECT_EQ(env.at("DL_PLAN"), "/ws/runs/r1/plan-rank-2.json");
  }
}

TEST(LaunchEnv, SchedulersValuesReachTheProgram) {
  Launch l = two_by_two();
  l.request = Request{};
  l.request.scheduler = detect_scheduler([](const char* name) -> std::optional<std::string> {
    const std::map<std::string, std::string> outer = {
        {"RANK", "3"}, {"WORLD_SIZE", "8"}, {"MASTER_ADDR", "node0"}, {"MASTER_PORT", "1234"}};
    const auto it = outer.find(name);
    return it == outer.end() ? std::optional<std::string>{} : it->second;
  });
  l.plan = make_plan(l.facts, l.request);
  const auto env =
      as_map(child_environment(l, [](const char*) { return std::optional<std::string>{}; }));
  EXPECT_EQ(env.at("RANK"), "3");
  EXPECT_EQ(env.at("LOCAL_RANK"), "0");
  EXPECT_EQ(env.at("WORLD_SIZE"), "8");
  EXPECT_EQ(env.at("MASTER_ADDR"), "node0");
  EXPECT_EQ(env.at("MASTER_PORT"), "1234");
  EXPECT_EQ(env.at("DL_DEVICE"), "cuda:0");
  EXPECT_EQ(env.at("DL_PLAN"), "/ws/runs/r1/plan-rank-3.json");
}

}  // namespace
}  // namespace dl::test
