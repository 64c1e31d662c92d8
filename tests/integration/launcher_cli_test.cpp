// Integration tests of dl-launch's command line, run as the real binary: --help and --version, the
// dry-run report and its JSON form, what the probe sees (CPU affinity, /dev/shm, GPUs through a
// fake NVML), the precedence of the three configuration sources, and bad input, which must end in
// one line on stderr, its own exit code, and nothing written to the workspace.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <regex>
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

// dl-launch with the fake NVML, so that the GPUs it sees are exactly those FAKE_NVML_GPUS lists
// (none unless a test sets it), whichever machine runs the tests.
std::vector<std::string> launch(std::vector<std::string> args) {
  args.insert(args.begin(), {kLaunch, "--nvml-library", kFakeNvml});
  return args;
}

// `prefix` followed by `argv`: dl-launch under taskset, setpriv or unshare.
std::vector<std::string> under(std::vector<std::string> prefix,
                               const std::vector<std::string>& argv) {
  prefix.insert(prefix.end(), argv.begin(), argv.end());
  return prefix;
}

struct PlanChoice {
  std::string value;
  std::string reason;
};

// One entry of the plan in --json output: "plan": { ..., "workers": {"value": 5, "reason": "..."}.
PlanChoice plan_choice(const std::string& json, const std::string& name) {
  const size_t plan = json.find("\"plan\": {");
  if (plan == std::string::npos) return {};
  const size_t at = json.find("\"" + name + "\": {", plan);
  if (at == std::string::npos) return {};
  static const std::regex kChoice(
      R"re("value": "?([^",\n]*)"?,\s*"reason": "((?:[^"\\]|\\.)*)")re");
  std::smatch m;
  const std::string rest = json.substr(at);
  if (!std::regex_search(rest, m, kChoice)) return {};
  return {m[1], m[2]};
}

// The value and reason of one row of the text report: "  workers    3         (reason)".
PlanChoice plan_row(const std::string& report, const std::string& name) {
  const std::regex row("\n  " + name + " +(\\S+) +\\((.*)\\)\n");
  std::smatch m;
  if (!std::regex_search(report, m, row)) return {};
  return {m[1], m[2]};
}

// Validates JSON with Python's parser and, when given, a Python expression over it as `d`.
// Returns "" when valid, else what Python said.
std::string python_json_check(const std::string& python, const std::string& json,
                              const std::string& assertion = "True") {
  TempDir scratch;
  write_file(scratch / "plan.json", json);
  const Result r =
      run({python, "-c",
           "import json, sys\nd = json.load(open(sys.argv[1]))\nassert " + assertion + "\n",
           scratch / "plan.json"});
  return r.code == 0 ? std::string{} : "python3 exit " + std::to_string(r.code) + ": " + r.err;
}

// The first CPU of this process's affinity mask, or -1.
int first_allowed_cpu() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return -1;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) return cpu;
  }
  return -1;
}

int json_usable_cpus(const std::string& json) {
  static const std::regex kUsable(R"("usable": (\d+))");
  std::smatch m;
  return std::regex_search(json, m, kUsable) ? std::stoi(m[1]) : -1;
}

// ---------------------------------------------------------------------------------------------
// --help, --version

TEST(LauncherCli, VersionPrintsNameAndVersion) {
  const Result r = run({kLaunch, "--version"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(std::regex_match(r.out, std::regex(R"(dl-launch \d+\.\d+\.\d+\n)"))) << r.out;
  EXPECT_EQ(r.err, "");
}

TEST(LauncherCli, HelpListsEveryOptionAndTheExitCodes) {
  const Result r = run({kLaunch, "--help"});
  EXPECT_EQ(r.code, 0) << r.err;
  for (const char* option :
       {"--workers", "--threads", "--batch-size", "--precision", "--device", "--workspace",
        "--config", "--dry-run", "--json", "--name", "--grace-period", "--nvml-library"}) {
    EXPECT_TRUE(contains(r.out, option)) << "--help does not mention " << option;
  }
  // A script that wraps dl-launch needs the exit codes to tell the failures apart.
  for (const char* code : {"64", "65", "66", "69", "73", "126", "127"}) {
    EXPECT_TRUE(contains(r.out, code)) << "--help does not list exit code " << code;
  }
}

// ---------------------------------------------------------------------------------------------
// The dry-run report

// On the real machine (the real NVML, if there is one): the report explains every figure.
TEST(LauncherCli, DryRunReportsMachineAndPlanWithReasonsAndWritesNothing) {
  TempDir ws;
  const Result r = run({kLaunch, "--dry-run", "--workspace", ws.path(), "--", kChild, "exit", "0"});
  ASSERT_EQ(r.code, 0) << r.err;

  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(^machine\n)"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\n  cpu +\d+ usable +\(.+\)\n)"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\n  memory +.+ usable of .+\n)"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\n  /dev/shm +\S.*\n)"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\n  gpu +\S.*\n)"))) << r.out;
  EXPECT_TRUE(contains(r.out, "\nplan\n")) << r.out;
  for (const char* row : {"device", "precision", "workers", "threads", "batch"}) {
    const PlanChoice c = plan_row(r.out, row);
    EXPECT_FALSE(c.value.empty()) << "no plan row for " << row << " in:\n" << r.out;
    EXPECT_FALSE(c.reason.empty()) << "plan row " << row << " gives no reason";
  }
  EXPECT_TRUE(contains(r.out, "not created: dry run")) << r.out;
  EXPECT_EQ(list_dir(ws.path()), std::vector<std::string>{}) << "a dry run wrote to the workspace";
}

TEST(LauncherCli, JsonIsAValidPlanDocumentAndWritesNothing) {
  TempDir ws;
  const Result r = run(launch({"--json", "--workspace", ws.path(), "--", kChild, "exit", "0"}));
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_FALSE(r.out.empty());
  EXPECT_EQ(r.out.front(), '{');
  EXPECT_TRUE(contains(r.out, "\"workers\"")) << r.out;
  EXPECT_TRUE(contains(r.out, "\"reason\"")) << r.out;
  EXPECT_EQ(list_dir(ws.path()), std::vector<std::string>{}) << "--json wrote to the workspace";

  const std::string python = find_program("python3");
  if (python.empty()) GTEST_SKIP() << "python3 not in PATH: JSON syntax not validated";
  EXPECT_EQ(python_json_check(python, r.out,
                              "d['format'] == 'dl-launch-plan' and "
                              "isinstance(d['plan']['workers']['value'], int) and "
                              "d['plan']['device']['value'] == 'cpu'"),
            "")
      << r.out;
}

TEST(LauncherCli, AffinityMaskLimitsUsableCores) {
  const std::string taskset = find_program("taskset");
  if (taskset.empty()) GTEST_SKIP() << "taskset not in PATH";
  TempDir ws;
  const auto argv = launch({"--json", "--workspace", ws.path(), "--", kChild, "exit", "0"});
  const Result unpinned = run(argv);
  ASSERT_EQ(unpinned.code, 0) << unpinned.err;
  // With a single usable core anyway (one CPU, a 1-CPU quota), pinning could not show anything.
  if (json_usable_cpus(unpinned.out) < 2) GTEST_SKIP() << "only one usable CPU here";

  const int cpu = first_allowed_cpu();
  ASSERT_GE(cpu, 0);
  const Result pinned = run(under({taskset, "-c", std::to_string(cpu)}, argv));
  ASSERT_EQ(pinned.code, 0) << pinned.err;
  EXPECT_TRUE(contains(pinned.out, "\"usable\": 1,")) << pinned.out;
  EXPECT_EQ(json_usable_cpus(pinned.out), 1);
}

// ---------------------------------------------------------------------------------------------
// GPUs, through the fake NVML

TEST(LauncherCli, VoltaGpuGetsCuda0AndFp16) {
  TempDir ws;
  const Result r = run(launch({"--json", "--workspace", ws.path(), "--", kChild, "exit", "0"}),
                       {{"FAKE_NVML_GPUS", "Tesla V100-SXM2-16GB,7,0,16384,16000"}});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(plan_choice(r.out, "device").value, "cuda:0") << r.out;
  const PlanChoice precision = plan_choice(r.out, "precision");
  EXPECT_EQ(precision.value, "fp16") << r.out;
  EXPECT_TRUE(contains(precision.reason, "7.0")) << precision.reason;
  EXPECT_TRUE(contains(r.out, "Tesla V100-SXM2-16GB")) << r.out;
  EXPECT_TRUE(contains(r.out, "535.104.05")) << r.out;
}

TEST(LauncherCli, AmpereGpuGetsBf16) {
  TempDir ws;
  const Result r = run(launch({"--json", "--workspace", ws.path(), "--", kChild, "exit", "0"}),
                       {{"FAKE_NVML_GPUS", "NVIDIA A100-SXM4-80GB,8,0,81920,80000"}});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(plan_choice(r.out, "device").value, "cuda:0") << r.out;
  EXPECT_EQ(plan_choice(r.out, "precision").value, "bf16") << r.out;
}

TEST(LauncherCli, DriverThatFailsToInitialiseMeansCpuNotAnError) {
  TempDir ws;
  const Result r = run(
      launch({"--json", "--workspace", ws.path(), "--", kChild, "exit", "0"}),
      {{"FAKE_NVML_GPUS", "Tesla V100-SXM2-16GB,7,0,16384,16000"}, {"FAKE_NVML_INIT_FAIL", "1"}});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(plan_choice(r.out, "device").value, "cpu") << r.out;
  EXPECT_EQ(plan_choice(r.out, "precision").value, "fp32") << r.out;
  // The report says why there is no GPU, in NVML's words.
  EXPECT_TRUE(contains(r.out, "Driver Not Loaded")) << r.out;
}

TEST(LauncherCli, ExplicitGpuIndexIsHonoured) {
  TempDir ws;
  const Result r = run(
      launch({"--json", "--workspace", ws.path(), "--device", "cuda:1", "--", kChild, "exit", "0"}),
      {{"FAKE_NVML_GPUS",
        "Tesla V100-SXM2-16GB,7,0,16384,16000;NVIDIA A100-SXM4-80GB,8,0,81920,80000"}});
  ASSERT_EQ(r.code, 0) << r.err;
  const PlanChoice device = plan_choice(r.out, "device");
  EXPECT_EQ(device.value, "cuda:1") << r.out;
  EXPECT_TRUE(contains(device.reason, "--device")) << device.reason;
  // Precision follows the chosen GPU (the A100), not cuda:0.
  EXPECT_EQ(plan_choice(r.out, "precision").value, "bf16") << r.out;
}

// ---------------------------------------------------------------------------------------------
// Bad input: its own exit code, one line naming the culprit, nothing written

class LauncherBadInput : public ::testing::Test {
 protected:
  // A real run of a harmless command: had the bad input gone unnoticed, the launcher would have
  // created runs/ in the workspace and started it.
  std::vector<std::string> launch_in_ws(std::vector<std::string> args) const {
    args.insert(args.begin(), {"--workspace", ws.path()});
    if (std::find(args.begin(), args.end(), "--") == args.end()) {
      args.insert(args.end(), {"--", kChild, "exit", "0"});
    }
    return launch(args);
  }

  // An error the user can act on: `code`, exactly one line on stderr naming each of `mentions`,
  // nothing on stdout, no crash.
  static void expect_user_error(const Result& r, int code,
                                const std::vector<std::string>& mentions) {
    EXPECT_EQ(r.code, code) << "stderr: " << r.err;
    EXPECT_EQ(r.signal, 0) << "dl-launch died of signal " << r.signal;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "stderr: " << r.err;
    EXPECT_FALSE(contains(r.err, "terminate called")) << r.err;
    EXPECT_FALSE(contains(r.err, "internal error")) << r.err;
    for (const auto& m : mentions) {
      EXPECT_TRUE(contains(r.err, m)) << "stderr does not name '" << m << "': " << r.err;
    }
    EXPECT_EQ(r.out, "") << "output before the error";
  }

  void expect_workspace_holds(const std::vector<std::string>& names) const {
    EXPECT_EQ(list_dir(ws.path()), names) << "the workspace was written to";
  }

  TempDir ws;
  TempDir scratch;  // files that must not be in the workspace
};

TEST_F(LauncherBadInput, UnknownOption) {
  expect_user_error(run(launch_in_ws({"--wrokers", "2"})), 64, {"wrokers"});
  expect_workspace_holds({});
}

TEST_F(LauncherBadInput, NegativeWorkers) {
  expect_user_error(run(launch_in_ws({"--workers=-3"})), 64, {"--workers", "-3"});
  expect_workspace_holds({});
}

TEST_F(LauncherBadInput, ZeroBatchSize) {
  expect_user_error(run(launch_in_ws({"--batch-size", "0"})), 64, {"--batch-size", "'0'"});
  expect_workspace_holds({});
}

TEST_F(LauncherBadInput, UnknownPrecisionListsTheValidOnes) {
  expect_user_error(run(launch_in_ws({"--precision", "fp17"})), 64,
                    {"--precision", "fp17", "fp32", "bf16"});
  expect_workspace_holds({});
}

TEST_F(LauncherBadInput, Fp16OnCpu) {
  expect_user_error(run(launch_in_ws({"--precision", "fp16"})), 64, {"--precision", "fp16"});
  expect_workspace_holds({});
}

TEST_F(LauncherBadInput, EnvironmentVariableWithBadValueIsNamed) {
  expect_user_error(run(launch_in_ws({}), {{"DL_WORKERS", "abc"}}), 64, {"DL_WORKERS", "abc"});
  expect_workspace_holds({});
}

TEST_F(LauncherBadInput, MissingWorkspace) {
  const std::string missing = ws / "missing";
  expect_user_error(run(launch({"--workspace", missing, "--", kChild, "exit", "0"})), 66,
                    {missing, "--workspace", "dl-launch init " + missing});
  expect_workspace_holds({});  // in particular, "missing" was not created
}

TEST_F(LauncherBadInput, WorkspaceThatIsAFile) {
  const std::string file = ws / "file";
  write_file(file, "not a directory\n");
  expect_user_error(run(launch({"--workspace", file, "--", kChild, "exit", "0"})), 73, {file});
  expect_workspace_holds({"file"});
}

TEST_F(LauncherBadInput, UnwritableWorkspace) {
  std::vector<std::string> prefix;
  if (geteuid() == 0) {
    // Root writes anywhere: drop to nobody, for whom a root-owned 0755 directory is read-only.
    const std::string setpriv = find_program("setpriv");
    if (setpriv.empty()) GTEST_SKIP() << "running as root and setpriv is not in PATH";
    prefix = {setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"};
    ASSERT_EQ(chmod(ws.path().c_str(), 0755), 0);
    const Result probe = run(under(prefix, {kLaunch, "--version"}));
    if (probe.code != 0) GTEST_SKIP() << "nobody cannot run " << kLaunch << ": " << probe.err;
  } else {
    ASSERT_EQ(chmod(ws.path().c_str(), 0555), 0);
  }
  // The line names the owner: the fix is theirs, or a --user for the container.
  expect_user_error(run(under(prefix, launch_in_ws({}))), 73,
                    {ws.path(), "not writable", "owned by", "uid"});
  expect_workspace_holds({});
}

TEST_F(LauncherBadInput, MissingExplicitConfig) {
  const std::string missing = scratch / "missing.conf";
  expect_user_error(run(launch_in_ws({"--config", missing})), 66, {missing});
  expect_workspace_holds({});
}

TEST_F(LauncherBadInput, MalformedConfigNamesTheFile) {
  write_file(ws / "dl.conf", "workers = 2\nthis is not valid\n");
  expect_user_error(run(launch_in_ws({})), 65, {ws / "dl.conf"});
  expect_workspace_holds({"dl.conf"});
}

TEST_F(LauncherBadInput, UnknownConfigKey) {
  write_file(ws / "dl.conf", "wrokers = 2\n");
  expect_user_error(run(launch_in_ws({})), 65, {ws / "dl.conf", "wrokers"});
  expect_workspace_holds({"dl.conf"});
}

TEST_F(LauncherBadInput, CommandPathThatDoesNotExist) {
  expect_user_error(run(launch_in_ws({"--", "/nonexistent/cmd"})), 127, {"/nonexistent/cmd"});
  expect_workspace_holds({});
}

TEST_F(LauncherBadInput, CommandNotInPath) {
  expect_user_error(run(launch_in_ws({"--", "no-such-command-xyz"})), 127, {"no-such-command-xyz"});
  expect_workspace_holds({});
}

TEST_F(LauncherBadInput, CommandNotExecutable) {
  const std::string script = scratch / "train.sh";
  write_file(script, "#!/bin/sh\nexit 0\n", 0644);
  expect_user_error(run(launch_in_ws({"--", script})), 126, {script});
  expect_workspace_holds({});
}

TEST_F(LauncherBadInput, CudaWithoutGpu) {
  // The GPU service started without the NVIDIA runtime: the line names both ways out.
  expect_user_error(run(launch_in_ws({"--device", "cuda"})), 69,
                    {"--device cuda", "no NVIDIA GPU visible", "NVML", "--gpus all",
                     "deploy.resources.reservations.devices", "docker compose up train-cpu"});
  expect_workspace_holds({});
}

TEST_F(LauncherBadInput, CudaFromTheEnvironmentWithoutGpu) {
  expect_user_error(run(launch_in_ws({}), {{"DL_DEVICE", "cuda"}}), 69,
                    {"DL_DEVICE cuda", "no NVIDIA GPU visible", "train-cpu"});
  expect_workspace_holds({});
}

// A CUDA 10.2 driver (440) under an image built for CUDA 11.6: refused before the trainer starts,
// with the driver to install.
TEST_F(LauncherBadInput, DriverTooOldForTheImagesCuda) {
  const EnvVars old_driver = {{"FAKE_NVML_GPUS", "Tesla V100-SXM2-16GB,7,0,16384,16000"},
                              {"FAKE_NVML_DRIVER", "440.33.01"},
                              {"FAKE_NVML_CUDA", "10020"},
                              {"CUDA_VERSION", "11.6.2"}};
  expect_user_error(run(launch_in_ws({}), old_driver), 69,
                    {"cuda:0", "440.33.01", "CUDA up to 10.2", "CUDA 11.6.2 (CUDA_VERSION)",
                     ">= 510.39.01", "--device cpu"});
  expect_workspace_holds({});
  // An explicit GPU is refused the same way; the CPU still trains.
  expect_user_error(run(launch_in_ws({"--device", "cuda"}), old_driver), 69, {"440.33.01"});
  EXPECT_EQ(run(launch_in_ws({"--device", "cpu"}), old_driver).code, 0);
}

// Same major, older minor (an 11.4 driver, an 11.6 image): CUDA's minor-version compatibility
// runs it, so the plan warns instead of refusing.
TEST(LauncherCli, DriverOneMinorBehindIsAWarning) {
  TempDir ws;
  const Result r = run(launch({"--dry-run", "--workspace", ws.path(), "--", kChild, "exit", "0"}),
                       {{"FAKE_NVML_GPUS", "Tesla T4,7,5,15360,15000"},
                        {"FAKE_NVML_DRIVER", "470.57.02"},
                        {"FAKE_NVML_CUDA", "11040"},
                        {"CUDA_VERSION", "11.6.2"}});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(plan_row(r.out, "device").value, "cuda:0") << r.out;
  EXPECT_TRUE(contains(r.out, "driver 470.57.02, CUDA 11.4")) << r.out;
  EXPECT_TRUE(contains(r.out, "minor-version compatibility")) << r.out;
  EXPECT_TRUE(contains(r.out, ">= 510.39.01")) << r.out;
}

// Without CUDA_VERSION (a native build) nothing is required of the driver.
TEST(LauncherCli, NoRequiredCudaMeansNoDriverCheck) {
  TempDir ws;
  const Result r = run(launch({"--json", "--workspace", ws.path(), "--", kChild, "exit", "0"}),
                       {{"FAKE_NVML_GPUS", "Tesla T4,7,5,15360,15000"},
                        {"FAKE_NVML_DRIVER", "440.33.01"},
                        {"FAKE_NVML_CUDA", "10020"}},
                       {"CUDA_VERSION"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(plan_choice(r.out, "device").value, "cuda:0") << r.out;
  EXPECT_TRUE(contains(r.out, "\"driver_cuda\": \"10.2\"")) << r.out;
}

TEST_F(LauncherBadInput, GpuIndexBeyondTheVisibleOnes) {
  expect_user_error(run(launch_in_ws({"--device", "cuda:3"}),
                        {{"FAKE_NVML_GPUS", "Tesla V100-SXM2-16GB,7,0,16384,16000"}}),
                    69, {"--device", "cuda:3"});
  expect_workspace_holds({});
}

// ---------------------------------------------------------------------------------------------
// Precedence: defaults < dl.conf < DL_* environment < command line

TEST(LauncherCli, SettingsPrecedenceCommandLineOverEnvironmentOverConfigFile) {
  TempDir ws;
  write_file(ws / "dl.conf", "workers = 3\nbatch-size = 32\n");
  const std::vector<std::string> tail = {"--", kChild, "exit", "0"};
  auto argv = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"--json", "--workspace", ws.path()});
    args.insert(args.end(), tail.begin(), tail.end());
    return launch(args);
  };

  const Result cli = run(argv({"--workers", "5"}), {{"DL_WORKERS", "4"}});
  ASSERT_EQ(cli.code, 0) << cli.err;
  EXPECT_EQ(plan_choice(cli.out, "workers").value, "5");
  EXPECT_TRUE(contains(plan_choice(cli.out, "workers").reason, "--workers")) << cli.out;

  const Result env = run(argv({}), {{"DL_WORKERS", "4"}});
  ASSERT_EQ(env.code, 0) << env.err;
  EXPECT_EQ(plan_choice(env.out, "workers").value, "4");
  EXPECT_TRUE(contains(plan_choice(env.out, "workers").reason, "DL_WORKERS")) << env.out;

  const Result file = run(argv({}));
  ASSERT_EQ(file.code, 0) << file.err;
  EXPECT_EQ(plan_choice(file.out, "workers").value, "3");
  EXPECT_TRUE(contains(plan_choice(file.out, "workers").reason, "dl.conf")) << file.out;

  // Each source sets only what it names: the batch size comes from dl.conf every time.
  for (const Result* r : {&cli, &env, &file}) {
    EXPECT_EQ(plan_choice(r->out, "batch_size").value, "32") << r->out;
    EXPECT_TRUE(contains(plan_choice(r->out, "batch_size").reason, "dl.conf")) << r->out;
  }
  EXPECT_EQ(list_dir(ws.path()), std::vector<std::string>{"dl.conf"});
}

// ---------------------------------------------------------------------------------------------
// A Docker-sized /dev/shm

class LauncherSmallShm : public ::testing::Test {
 protected:
  void SetUp() override {
    unshare_ = find_program("unshare");
    if (unshare_.empty()) GTEST_SKIP() << "unshare not in PATH";
    if (geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs on /dev/shm needs root";
    // A private mount namespace, so the small /dev/shm is seen by dl-launch only.
    const Result probe = run({unshare_, "-m", "sh", "-c", kMount});
    if (probe.code != 0) GTEST_SKIP() << "cannot mount a tmpfs in a mount namespace: " << probe.err;
  }

  // dl-launch with a 64 MiB /dev/shm, Docker's default.
  Result run_with_small_shm(const std::vector<std::string>& argv) const {
    return run(
        under({unshare_, "-m", "sh", "-c", std::string(kMount) + " && exec \"$@\"", "sh"}, argv));
  }

  static constexpr const char* kMount = "mount -t tmpfs -o size=64m tmpfs /dev/shm";
  std::string unshare_;
  TempDir ws;
};

TEST_F(LauncherSmallShm, WarnsWithTheComposeFix) {
  const Result r = run_with_small_shm(
      launch({"--dry-run", "--workspace", ws.path(), "--", kChild, "exit", "0"}));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(
      std::regex_search(r.out, std::regex(R"(\n  /dev/shm +64\.0 MiB free of 64\.0 MiB\n)")))
      << r.out;
  EXPECT_TRUE(contains(r.out, "shm_size")) << r.out;
  EXPECT_TRUE(contains(r.out, "ipc: host")) << r.out;
  // Not a Python program: batches do not travel through /dev/shm, so it does not cap the workers.
  EXPECT_FALSE(contains(plan_row(r.out, "workers").reason, "/dev/shm")) << r.out;
}

TEST_F(LauncherSmallShm, CapsPythonDataLoaderWorkers) {
  // A program named python3 (the test child under that name: a dry run never starts it) tells
  // dl-launch that DataLoader workers will pass their batches through /dev/shm.
  TempDir bin;
  ASSERT_EQ(symlink(kChild.c_str(), (bin / "python3").c_str()), 0);
  const Result r =
      run_with_small_shm(launch({"--dry-run", "--workspace", ws.path(), "--input-shape",
                                 "3x224x224", "--", bin / "python3", "-c", "pass"}));
  ASSERT_EQ(r.code, 0) << r.err;
  const PlanChoice workers = plan_row(r.out, "workers");
  // 2 batches of 64 x 3x224x224 floats (73.5 MiB) per worker do not fit in half of 64 MiB.
  EXPECT_EQ(workers.value, "0") << r.out;
  EXPECT_TRUE(contains(workers.reason, "/dev/shm")) << r.out;
  EXPECT_TRUE(contains(r.out, "shm_size")) << r.out;
}

}  // namespace
}  // namespace dl::test
