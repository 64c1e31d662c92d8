// Integration tests of real runs: dl-launch starts the test child in the workspace with the plan
// in its environment, passes its exit status through, forwards stop signals to its whole process
// group (what lets `docker stop` end in a saved checkpoint), and kills it when it ignores them.
// Signals are sent only after the child has printed "ready", so no test depends on timing.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "support/build_paths.h"
#include "support/files.h"
#include "support/matchers.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace dl::test {
namespace {

const std::string kLaunch = dl::test::kLaunchBin;
const std::string kChild = dl::test::kTestChild;
const std::string kFakeNvml = dl::test::kFakeNvml;

// dl-launch with the fake NVML and no fake GPU: a CPU machine, whichever machine runs the tests.
std::vector<std::string> launch(std::vector<std::string> args) {
  args.insert(args.begin(), {kLaunch, "--nvml-library", kFakeNvml});
  return args;
}

class LauncherRun : public ::testing::Test {
 protected:
  TempDir ws;
  TempDir scratch;  // the child's output files, kept out of the workspace
};

TEST_F(LauncherRun, ChildGetsThePlanAsEnvironmentAndTheWorkspaceAsDirectory) {
  const std::string out = scratch / "env";
  const Result r = run(launch({"--workspace", ws.path(), "--name", "r1", "--workers", "1",
                               "--threads", "1", "--batch-size", "16", "--", kChild, "env", out}),
                       {}, kSchedulerVars);
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_TRUE(file_exists(out)) << "the child did not run: " << r.err;

  const auto env = read_env_file(out);
  const std::string workspace = real_path(ws.path());
  const std::string run_dir = workspace + "/runs/r1";
  EXPECT_EQ(env.at("cwd"), workspace);
  const std::map<std::string, std::string> expected = {
      {"DL_WORKSPACE", workspace},
      {"DL_RUN_DIR", run_dir},
      {"DL_RUN_NAME", "r1"},
      {"DL_PLAN", run_dir + "/plan.json"},
      {"DL_DEVICE", "cpu"},
      {"DL_PRECISION", "fp32"},
      {"DL_WORKERS", "1"},
      {"DL_THREADS", "1"},
      {"DL_BATCH_SIZE", "16"},
      {"OMP_NUM_THREADS", "1"},
      {"RANK", "0"},
      {"LOCAL_RANK", "0"},
      {"WORLD_SIZE", "1"},
      {"LOCAL_WORLD_SIZE", "1"},
  };
  for (const auto& [name, value] : expected) {
    const auto it = env.find(name);
    ASSERT_NE(it, env.end()) << name << " is not set for the child";
    EXPECT_EQ(it->second, value) << name;
  }
  // torch.distributed's init_process_group needs both even for a single process.
  ASSERT_TRUE(env.count("MASTER_ADDR"));
  EXPECT_FALSE(env.at("MASTER_ADDR").empty());
  ASSERT_TRUE(env.count("MASTER_PORT"));
  EXPECT_GT(std::stoi(env.at("MASTER_PORT")), 0);

  // The plan the child was promised is on disk where DL_PLAN says.
  const std::string plan = read_file(run_dir + "/plan.json");
  EXPECT_TRUE(contains(plan, "\"run_name\": \"r1\"")) << plan;
  EXPECT_TRUE(contains(plan, "\"DL_BATCH_SIZE\": \"16\"")) << plan;
  // Written atomically: no temporary file is left behind; the command's output is logged.
  EXPECT_EQ(list_dir(run_dir), (std::vector<std::string>{"plan.json", "rank-0.log", "run.lock"}));
}

// --- Whose files: as root on a workspace that belongs to another user (the container on the host
// user's bind mount), the program runs as that user and everything in the workspace is theirs.

constexpr uid_t kNobody = 65534;

uid_t owner_of(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0 ? st.st_uid : static_cast<uid_t>(-1);
}

TEST_F(LauncherRun, AsRootTheProgramRunsAsTheWorkspaceOwner) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (the container's case)";
  ASSERT_EQ(chown(ws.path().c_str(), kNobody, kNobody), 0);
  const std::string out = ws / "env.txt";  // written by the child: in the workspace, as a user
  const Result r = run(launch(
      {"--workspace", ws.path(), "--name", "r1", "--workers", "1", "--", kChild, "env", out}));
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_TRUE(file_exists(out)) << "the child did not run: " << r.err;
  const auto env = read_env_file(out);
  EXPECT_EQ(env.at("uid"), "65534");
  EXPECT_EQ(env.at("gid"), "65534");
  EXPECT_EQ(env.at("groups"), "65534") << "root's supplementary groups were kept";
  EXPECT_EQ(owner_of(out), kNobody);
  for (const char* made : {"runs", "runs/r1", "runs/r1/plan.json"}) {
    EXPECT_EQ(owner_of(ws / made), kNobody) << made << " was left to root";
  }
  // HOME is one the user can write to (nobody's passwd home, /nonexistent, is not).
  ASSERT_TRUE(env.count("HOME"));
  EXPECT_EQ(owner_of(env.at("HOME")), kNobody) << env.at("HOME");
  EXPECT_TRUE(contains(read_file(ws / "runs/r1/plan.json"), "\"uid\": 65534"));
  EXPECT_TRUE(contains(r.out, "user ")) << r.out;
}

TEST_F(LauncherRun, RunAsOwnerOffKeepsTheLaunchersUser) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (the container's case)";
  ASSERT_EQ(chown(ws.path().c_str(), kNobody, kNobody), 0);
  const std::string out = scratch / "env";
  const Result r = run(launch({"--workspace", ws.path(), "--name", "r1", "--workers", "1", "--",
                               kChild, "env", out}),
                       {{"DL_RUN_AS_OWNER", "false"}});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(read_env_file(out).at("uid"), "0");
  EXPECT_EQ(owner_of(ws / "runs/r1"), 0u);
}

TEST_F(LauncherRun, PlanJsonIsValidJson) {
  const Result r = run(launch(
      {"--workspace", ws.path(), "--name", "r1", "--workers", "1", "--", kChild, "exit", "0"}));
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string plan_path = ws / "runs/r1/plan.json";
  ASSERT_TRUE(file_exists(plan_path));
  const std::string python = find_program("python3");
  if (python.empty()) GTEST_SKIP() << "python3 not in PATH: plan.json syntax not validated";
  const Result check = run({python, "-c",
                            "import json, sys\n"
                            "d = json.load(open(sys.argv[1]))\n"
                            "assert d['run_name'] == 'r1'\n"
                            "assert d['plan']['workers']['value'] == 1\n"
                            "assert d['env']['DL_WORKERS'] == '1'\n",
                            plan_path});
  EXPECT_EQ(check.code, 0) << check.err << read_file(plan_path);
}

// `dl-launch -- python3 train.py` finds dl_plan from the build tree (<build>/python, whose dl_plan
// links to the sources' python/dl_plan, beside dl_loader) ahead of whatever the user's PYTHONPATH
// holds.
TEST_F(LauncherRun, AProgramAfterDashesGetsTheCompanionFirstOnPythonPath) {
  const std::string out = scratch / "env";
  const Result r = run(launch({"--workspace", ws.path(), "--", kChild, "env", out}),
                       {{"PYTHONPATH", "/elsewhere"}}, kSchedulerVars);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto env = read_env_file(out);
  ASSERT_TRUE(env.count("PYTHONPATH")) << "no PYTHONPATH for the child";
  const std::string path = env.at("PYTHONPATH");
  const std::size_t colon = path.find(':');
  ASSERT_NE(colon, std::string::npos) << path;
  EXPECT_EQ(path.substr(colon), ":/elsewhere");
  EXPECT_EQ(real_path(path.substr(0, colon) + "/dl_plan"),
            real_path(std::string(dl::test::kPythonSource) + "/dl_plan"))
      << path;
}

// Under Slurm or a PyTorchJob the scheduler's ranks and the user's thread count must survive.
TEST_F(LauncherRun, PresetSchedulerAndThreadVariablesAreKept) {
  const std::string out = scratch / "env";
  const Result r =
      run(launch({"--workspace", ws.path(), "--threads", "2", "--", kChild, "env", out}),
          {{"RANK", "3"}, {"WORLD_SIZE", "8"}, {"OMP_NUM_THREADS", "7"}}, kSchedulerVars);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto env = read_env_file(out);
  ASSERT_TRUE(env.count("RANK") && env.count("WORLD_SIZE") && env.count("LOCAL_RANK"));
  EXPECT_EQ(env.at("RANK"), "3");
  EXPECT_EQ(env.at("WORLD_SIZE"), "8");
  EXPECT_EQ(env.at("LOCAL_RANK"), "0");  // not preset: the default
  EXPECT_EQ(env.at("OMP_NUM_THREADS"), "7");
  EXPECT_EQ(env.at("DL_THREADS"), "2");
}

TEST_F(LauncherRun, RunsWithoutANameGetDistinctDirectories) {
  // Back to back, very likely within the same second: the timestamp names must still differ.
  const Result first = run(launch({"--workspace", ws.path(), "--", kChild, "env", scratch / "1"}));
  const Result second = run(launch({"--workspace", ws.path(), "--", kChild, "env", scratch / "2"}));
  ASSERT_EQ(first.code, 0) << first.err;
  ASSERT_EQ(second.code, 0) << second.err;
  const auto env1 = read_env_file(scratch / "1");
  const auto env2 = read_env_file(scratch / "2");
  ASSERT_TRUE(env1.count("DL_RUN_DIR") && env2.count("DL_RUN_DIR"));
  EXPECT_NE(env1.at("DL_RUN_DIR"), env2.at("DL_RUN_DIR"));
  EXPECT_NE(env1.at("DL_RUN_NAME"), env2.at("DL_RUN_NAME"));
  const auto runs = list_dir(ws / "runs");
  ASSERT_EQ(runs.size(), 2u);
  for (const auto& name : runs) {
    EXPECT_TRUE(file_exists(ws / ("runs/" + name + "/plan.json"))) << name;
  }
}

// ---------------------------------------------------------------------------------------------
// Exit status passthrough

struct ExitCase {
  const char* mode;
  const char* arg;
  int code;
};

// Readable parameters in failure messages instead of gtest's byte dump.
void PrintTo(const ExitCase& c, std::ostream* os) {
  *os << c.mode << " " << c.arg << " -> " << c.code;
}

class LauncherExitCode : public LauncherRun, public ::testing::WithParamInterface<ExitCase> {};

TEST_P(LauncherExitCode, IsTheChildsOwn) {
  const ExitCase& c = GetParam();
  const Result r = run(launch({"--workspace", ws.path(), "--", kChild, c.mode, c.arg}));
  EXPECT_EQ(r.code, c.code) << r.err;
  // dl-launch itself exits normally with 128+N; it does not die of the child's signal.
  EXPECT_EQ(r.signal, 0);
}

INSTANTIATE_TEST_SUITE_P(Codes, LauncherExitCode,
                         ::testing::Values(ExitCase{"exit", "7", 7}, ExitCase{"exit", "0", 0},
                                           ExitCase{"signal", "9", 137},
                                           ExitCase{"signal", "15", 143}),
                         [](const ::testing::TestParamInfo<ExitCase>& p) {
                           return std::string(p.param.mode) + "_" + p.param.arg;
                         });

// ---------------------------------------------------------------------------------------------
// Stop signals

class LauncherStopSignal : public LauncherRun, public ::testing::WithParamInterface<int> {};

// docker stop sends SIGTERM to dl-launch (PID 1 in the container); Ctrl-C sends SIGINT; a closed
// terminal SIGHUP. Each must reach the trainer, which saves and exits 0.
TEST_P(LauncherStopSignal, IsForwardedAndTheChildSavesAndExits) {
  const int sig = GetParam();
  const std::string saved = scratch / "saved";
  // A grace period well below the 30 s default, so that a signal that is not forwarded fails the
  // test in seconds (the child is then killed, and exits 137 without saving).
  Process launcher(
      launch({"--workspace", ws.path(), "--grace-period", "5", "--", kChild, "wait-term", saved}));
  ASSERT_TRUE(launcher.wait_for_line("ready")) << launcher.out();
  launcher.send_signal(sig);
  const Result r = launcher.wait(std::chrono::seconds(20));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.signal, 0) << "dl-launch died of the signal instead of forwarding it";
  EXPECT_EQ(read_file(saved), "saved " + std::to_string(sig) + "\n");
}

INSTANTIATE_TEST_SUITE_P(Signals, LauncherStopSignal, ::testing::Values(SIGTERM, SIGINT, SIGHUP),
                         [](const ::testing::TestParamInfo<int>& p) {
                           return p.param == SIGTERM  ? "SIGTERM"
                                  : p.param == SIGINT ? "SIGINT"
                                                      : "SIGHUP";
                         });

TEST_F(LauncherRun, ChildIgnoringTheStopSignalIsKilledAfterTheGracePeriod) {
  Process launcher(
      launch({"--workspace", ws.path(), "--grace-period", "0.3", "--", kChild, "ignore-term"}));
  ASSERT_TRUE(launcher.wait_for_line("ready")) << launcher.out();
  const auto sent = std::chrono::steady_clock::now();
  launcher.send_signal(SIGTERM);
  const Result r = launcher.wait(std::chrono::seconds(20));
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - sent;
  EXPECT_EQ(r.code, 128 + SIGKILL) << r.err;
  EXPECT_EQ(r.signal, 0) << "dl-launch itself died of signal " << r.signal;
  // Not before the grace period; and long before the 30 s default.
  EXPECT_GE(took.count(), 0.3);
  EXPECT_LT(took.count(), 5.0);
  EXPECT_TRUE(contains(r.err, "killing")) << r.err;
}

// A DataLoader's workers are the trainer's children: the signal goes to the whole group.
TEST_F(LauncherRun, StopSignalReachesTheWholeProcessGroup) {
  const std::string log = scratch / "log";
  // A short grace period, as above: a grandchild left out is killed, not waited for.
  Process launcher(
      launch({"--workspace", ws.path(), "--grace-period", "5", "--", kChild, "group", log}));
  ASSERT_TRUE(launcher.wait_for_line("ready")) << launcher.out();
  launcher.send_signal(SIGTERM);
  const Result r = launcher.wait(std::chrono::seconds(20));
  EXPECT_EQ(r.code, 0) << r.err;
  // Whole lines: "grandchild 15" alone must not pass for the child's line too.
  const std::string text = "\n" + read_file(log);
  EXPECT_TRUE(contains(text, "\nchild 15\n")) << text;
  EXPECT_TRUE(contains(text, "\ngrandchild 15\n")) << text;
}

}  // namespace
}  // namespace dl::test
