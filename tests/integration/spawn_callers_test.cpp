// The launcher's three spawners, all through spawn_child (core/spawn.h): the supervised program
// (supervise), a rank (supervise_ranks) and a probe (run_captured) each start the helper child,
// which lists the descriptors it was started with: only 0, 1 and 2 (a descriptor the test process
// left inheritable does not reach them), and under dl-launch the run lock a rank is handed. For the
// same variables their children get the same environment, and a working directory only root may
// enter is refused, before exec, with the folder named.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <sstream>
#include <string>

#include "core/errors.h"
#include "launcher/captured_run.h"
#include "launcher/rank_supervisor.h"
#include "launcher/supervisor.h"
#include "support/build_paths.h"
#include "support/files.h"
#include "support/matchers.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace dl::test {
namespace {

const std::string kChild = dl::test::kTestChild;
const std::string kLaunch = dl::test::kLaunchBin;
const std::string kFakeNvml = dl::test::kFakeNvml;
constexpr uid_t kNobody = 65534;

// "N -> target" lines of the helper's `fds` mode, by descriptor.
std::map<int, std::string> parse_fds(const std::string& text) {
  std::map<int, std::string> fds;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const auto arrow = line.find(" -> ");
    if (arrow != std::string::npos) fds[std::stoi(line.substr(0, arrow))] = line.substr(arrow + 4);
  }
  return fds;
}

// A descriptor the test process leaves inheritable (no O_CLOEXEC), as a careless open would.
class StrayFd {
 public:
  explicit StrayFd(const std::string& path) : fd_(open(path.c_str(), O_WRONLY | O_CREAT, 0644)) {}
  ~StrayFd() {
    if (fd_ >= 0) close(fd_);
  }
  StrayFd(const StrayFd&) = delete;
  StrayFd& operator=(const StrayFd&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

RankGroupSpec one_rank(const std::vector<std::string>& argv, const std::string& dir,
                       const EnvList& env = {}) {
  RankGroupSpec spec;
  spec.argv = argv;
  spec.cwd = dir;
  spec.log_dir = dir;
  RankSpawn rank;
  rank.env = env;
  spec.ranks = {rank};
  return spec;
}

TEST(SpawnCallers, RankHasOnlyStdinStdoutAndStderr) {
  TempDir dir;
  const StrayFd stray(dir / "stray");
  ASSERT_GE(stray.fd(), 3);
  ASSERT_EQ(supervise_ranks(one_rank({kChild, "fds", "-"}, dir.path())), 0);
  const std::string log = read_file(dir / "rank-0.log");
  const auto fds = parse_fds(log);
  ASSERT_EQ(fds.size(), 3u) << log;
  EXPECT_EQ(fds.at(0), "/dev/null") << log;
  EXPECT_TRUE(contains(fds.at(1), "pipe:")) << log;
  EXPECT_TRUE(contains(fds.at(2), "pipe:")) << log;
}

TEST(SpawnCallers, ProbeHasOnlyStdinStdoutAndStderr) {
  TempDir dir;
  const StrayFd stray(dir / "stray");
  ASSERT_GE(stray.fd(), 3);
  const CapturedRun r = run_captured({kChild, "fds", "-"}, dir.path(), {}, 30);
  ASSERT_EQ(r.code, 0) << r.start_error << r.err;
  const auto fds = parse_fds(r.out);
  ASSERT_EQ(fds.size(), 3u) << r.out;
  EXPECT_EQ(fds.at(0), "/dev/null") << r.out;
  EXPECT_TRUE(contains(fds.at(1), "pipe:")) << r.out;
  EXPECT_TRUE(contains(fds.at(2), "pipe:")) << r.out;
}

// Through dl-launch itself: each rank also keeps the run lock, passed on purpose (DL_RUN_LOCK_FD).
TEST(SpawnCallers, RanksOfDlLaunchKeepStdioAndTheRunLockOnly) {
  TempDir ws;
  const Result r = run({kLaunch, "--nvml-library", kFakeNvml, "--workspace", ws.path(), "--name",
                        "r1", "--nproc-per-node", "2", "--", kChild, "fds", "-"},
                       {}, kSchedulerVars);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  for (const char* log_name : {"rank-0.log", "rank-1.log"}) {
    const std::string log = read_file(ws / "runs/r1/" + log_name);
    const auto fds = parse_fds(log);
    ASSERT_EQ(fds.size(), 4u) << log_name << ":\n" << log;
    EXPECT_EQ(fds.at(0), "/dev/null") << log;
    EXPECT_TRUE(contains(fds.at(1), "pipe:")) << log;
    EXPECT_TRUE(contains(fds.at(2), "pipe:")) << log;
    EXPECT_EQ(fds.rbegin()->second, real_path(ws / "runs/r1/run.lock")) << log;
  }
}

TEST(SpawnCallers, SupervisedProgramHasOnlyTheLaunchersStdio) {
  TempDir dir;
  const StrayFd stray(dir / "stray");
  ASSERT_GE(stray.fd(), 3);
  SpawnSpec spec;
  spec.argv = {kChild, "fds", dir / "fds.txt"};
  spec.cwd = dir.path();
  ASSERT_EQ(supervise(spec), 0);
  const std::string text = read_file(dir / "fds.txt");
  const auto fds = parse_fds(text);
  ASSERT_FALSE(fds.empty()) << text;
  EXPECT_LE(fds.rbegin()->first, 2) << text;  // stdin, stdout and stderr as the launcher has them
}

TEST(SpawnCallers, SameVariablesGiveTheSameEnvironment) {
  TempDir dir;
  const EnvList env = {{"DL_SPAWN_A", "first"}, {"HOME", "/nowhere"}, {"DL_SPAWN_A", "last"}};
  SpawnSpec program;
  program.argv = {kChild, "env", dir / "program.env"};
  program.cwd = dir.path();
  program.env = env;
  ASSERT_EQ(supervise(program), 0);
  ASSERT_EQ(supervise_ranks(one_rank({kChild, "env", dir / "rank.env"}, dir.path(), env)), 0);
  const CapturedRun probe = run_captured({kChild, "env", dir / "probe.env"}, dir.path(), env, 30);
  ASSERT_EQ(probe.code, 0) << probe.start_error << probe.err;
  const std::string expected = read_file(dir / "program.env");
  EXPECT_TRUE(contains(expected, "\nDL_SPAWN_A=last\n")) << expected;
  EXPECT_TRUE(contains(expected, "\nHOME=/nowhere\n")) << expected;
  EXPECT_EQ(count_of(expected, "DL_SPAWN_A="), 1) << expected;
  EXPECT_EQ(read_file(dir / "rank.env"), expected);
  EXPECT_EQ(read_file(dir / "probe.env"), expected);
}

TEST(SpawnCallers, FolderOnlyRootMayEnterIsRefusedBeforeExec) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root, to switch to uid " << kNobody;
  TempDir dir;
  ASSERT_EQ(chmod(dir.path().c_str(), 0755), 0);
  const std::string closed = dir / "closed";
  ASSERT_EQ(mkdir(closed.c_str(), 0700), 0);
  const Identity nobody{kNobody, kNobody, "nobody", ""};
  const std::string refusal = "cannot enter " + closed + ": Permission denied";

  SpawnSpec program;
  program.argv = {kChild, "exit", "0"};
  program.cwd = closed;
  program.identity = nobody;
  try {
    supervise(program);
    FAIL() << "the program was started in " << closed;
  } catch (const UserError& e) {
    EXPECT_EQ(e.code(), exit_code::kNotExecutable);
    EXPECT_EQ(std::string(e.what()), "cannot start " + kChild + ": " + refusal);
  }

  // Its log is written as its user, in a folder of theirs.
  const std::string logs = dir / "logs";
  ASSERT_EQ(mkdir(logs.c_str(), 0755), 0);
  ASSERT_EQ(chown(logs.c_str(), kNobody, kNobody), 0);
  RankGroupSpec ranks = one_rank({kChild, "exit", "0"}, closed);
  ranks.log_dir = logs;
  ranks.identity = nobody;
  try {
    supervise_ranks(ranks);
    FAIL() << "the rank was started in " << closed;
  } catch (const UserError& e) {
    EXPECT_EQ(e.code(), exit_code::kNotExecutable);
    EXPECT_EQ(std::string(e.what()), "cannot start rank 0 (" + kChild + "): " + refusal);
  }

  const CapturedRun probe = run_captured({kChild, "exit", "0"}, closed, {}, 30, nobody);
  EXPECT_EQ(probe.code, -1);
  EXPECT_EQ(probe.start_error, refusal);
}

}  // namespace
}  // namespace dl::test
