// Several ranks under the real dl-launch, with small shell scripts as the ranks (no dl-train, no
// network): each rank's log and the terminal, the torchrun contract per rank, a rank killed with
// SIGKILL or exiting 3 stopping the others, Ctrl-C reaching every rank, a master port in use, and
// the schedulers' environments (Slurm, PyTorchJob, torchrun) as the schedulers would set them.
// Signals are sent only after the ranks have said they are ready, so nothing depends on timing.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <set>
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

using Clock = std::chrono::steady_clock;

const std::string kLaunch = dl::test::kLaunchBin;
const std::string kFakeNvml = dl::test::kFakeNvml;

// Variables a scheduler or the user may have set around the test run: every test starts without
// them and sets the ones it is about.
const std::vector<std::string> kOuterVars = {"RANK",
                                             "LOCAL_RANK",
                                             "WORLD_SIZE",
                                             "LOCAL_WORLD_SIZE",
                                             "GROUP_RANK",
                                             "GROUP_WORLD_SIZE",
                                             "MASTER_ADDR",
                                             "MASTER_PORT",
                                             "TORCHELASTIC_RUN_ID",
                                             "OMP_NUM_THREADS",
                                             "MKL_NUM_THREADS",
                                             "SLURM_JOB_ID",
                                             "SLURM_JOBID",
                                             "SLURM_STEP_ID",
                                             "SLURM_STEPID",
                                             "SLURM_PROCID",
                                             "SLURM_LOCALID",
                                             "SLURM_NTASKS",
                                             "SLURM_NPROCS",
                                             "SLURM_STEP_NUM_TASKS",
                                             "SLURM_NODEID",
                                             "SLURM_JOB_NODELIST",
                                             "SLURM_NODELIST",
                                             "SLURM_STEP_NODELIST",
                                             "SLURM_NTASKS_PER_NODE",
                                             "SLURM_TASKS_PER_NODE",
                                             "SLURM_STEP_TASKS_PER_NODE",
                                             "SLURM_JOB_NUM_NODES",
                                             "SLURM_NNODES",
                                             "SLURM_STEP_NUM_NODES",
                                             "PET_NPROC_PER_NODE",
                                             "PET_NNODES",
                                             "PET_NODE_RANK",
                                             "PET_MASTER_ADDR",
                                             "PET_MASTER_PORT"};

// dl-launch on a CPU machine (the fake NVML without a fake GPU), whichever machine runs the tests.
std::vector<std::string> launch(std::vector<std::string> args) {
  args.insert(args.begin(), {kLaunch, "--nvml-library", kFakeNvml});
  return args;
}

class LauncherRanks : public ::testing::Test {
 protected:
  // A fake rank: `body` runs in sh with OUT set to the scratch directory; before it, the rank
  // runs `setup` (its traps) and then writes its environment to $OUT/env-$RANK and its pid to
  // $OUT/pid-$RANK, so a rank whose pid file exists has its handlers in place.
  std::string rank_script(const std::string& body, const std::string& setup = "") {
    const std::string path = scratch / "rank.sh";
    write_file(
        path,
        "#!/bin/sh\n"
        "OUT='" +
            scratch.path() + "'\n" + setup +
            "env > \"$OUT/env-$RANK.tmp\" && mv \"$OUT/env-$RANK.tmp\" \"$OUT/env-$RANK\"\n"
            "echo $$ > \"$OUT/pid-$RANK.tmp\" && mv \"$OUT/pid-$RANK.tmp\" \"$OUT/pid-$RANK\"\n" +
            body,
        0755);
    return path;
  }
  // Blocks in `wait`, which a trapped signal interrupts at once.
  static std::string wait_forever() { return "sleep 600 & wait $!\n"; }
  // Rank 0 says "ready" on the terminal once every rank of `world` has written its pid.
  static std::string ready_when_all_started(int world) {
    return "if [ \"$RANK\" = 0 ]; then\n"
           "  while [ $(ls \"$OUT\" | grep -c '^pid-[0-9]*$') -lt " +
           std::to_string(world) +
           " ]; do sleep 0.02; done\n"
           "  echo ready\n"
           "fi\n";
  }
  // A rank script's first lines for the restart tests: n is this rank's attempt, counted in
  // $OUT/attempts-$RANK.
  static std::string count_attempts() {
    return "n=$(cat \"$OUT/attempts-$RANK\" 2>/dev/null || echo 0); n=$((n + 1))\n"
           "echo $n > \"$OUT/attempts-$RANK\"\n";
  }
  int pid_of(int rank) { return std::stoi(read_file(scratch / ("pid-" + std::to_string(rank)))); }

  TempDir ws;
  TempDir scratch;
};

TEST_F(LauncherRanks, EachRankHasItsLogAndTheTerminalShowsRankZero) {
  const std::string script = rank_script(
      "echo \"hello from rank $RANK\"\n"
      "echo \"complaint from rank $RANK\" >&2\n");
  const Result r =
      run(launch({"--workspace", ws.path(), "--name", "r1", "--nproc-per-node", "2", "--", script}),
          {}, kOuterVars);
  ASSERT_EQ(r.code, 0) << show(r);
  const std::string run_dir = ws / "runs/r1";
  for (int rank : {0, 1}) {
    const std::string log = read_file(run_dir + "/rank-" + std::to_string(rank) + ".log");
    const std::string n = std::to_string(rank);
    EXPECT_TRUE(contains(log, "hello from rank " + n + "\n")) << log;
    EXPECT_TRUE(contains(log, "complaint from rank " + n + "\n")) << log;
  }
  // Each stream where it would go without dl-launch: stdout on stdout, stderr on stderr.
  EXPECT_TRUE(contains(r.out, "hello from rank 0\n")) << r.out;
  EXPECT_TRUE(contains(r.err, "complaint from rank 0\n")) << r.err;
  EXPECT_FALSE(contains(r.out, "complaint")) << r.out;
  EXPECT_FALSE(contains(r.out + r.err, "from rank 1")) << r.out;
  EXPECT_FALSE(contains(r.out, "[rank ")) << "one rank shown: no prefix\n" << r.out;
  EXPECT_TRUE(file_exists(run_dir + "/plan.json"));
}

// One process of a command after --: its output is logged as a rank's is, as it comes, so a
// kill -9 of the program (or of dl-launch) loses nothing it printed.
TEST_F(LauncherRanks, AScriptAloneIsLoggedAndAKillLosesNothingPrinted) {
  const std::string script = rank_script(
      "echo \"hello from rank $RANK\"\n"
      "echo \"complaint from rank $RANK\" >&2\n"
      "echo ready\n" +
      wait_forever());
  Process launcher(launch({"--workspace", ws.path(), "--name", "one", "--", script}), {},
                   kOuterVars);
  ASSERT_TRUE(launcher.wait_for_line("ready")) << launcher.out();
  ASSERT_EQ(kill(pid_of(0), SIGKILL), 0);
  const Result r = launcher.wait(std::chrono::seconds(30));
  EXPECT_EQ(r.code, 128 + SIGKILL) << show(r);
  const std::string log = read_file(ws / "runs/one/rank-0.log");
  EXPECT_TRUE(contains(log, "hello from rank 0\n")) << log;
  EXPECT_TRUE(contains(log, "complaint from rank 0\n")) << log;
  EXPECT_TRUE(contains(log, "ready\n")) << log;
  EXPECT_TRUE(contains(r.out, "hello from rank 0\n")) << r.out;
  EXPECT_TRUE(contains(r.err, "complaint from rank 0\n")) << r.err;
  EXPECT_FALSE(contains(r.out, "[rank ")) << r.out;
}

// A line written in two pieces on stderr (Python's print: the text, then the newline) with a
// stdout line between them stays two lines, in the log and on the terminal; a progress bar's \r
// passes through, and a last line without its newline is kept.
TEST_F(LauncherRanks, LinesOfStdoutAndStderrAreNotJoined) {
  const std::string script = rank_script(
      "printf 'resumed at batch 9' >&2; sleep 0.3; echo 'starting at step 8'; sleep 0.3; "
      "printf '\\n' >&2; printf '10%%\\r20%%\\r'; sleep 0.3; printf 'no newline'\n");
  const Result r =
      run(launch({"--workspace", ws.path(), "--name", "lines", "--", script}), {}, kOuterVars);
  ASSERT_EQ(r.code, 0) << show(r);
  const std::string log = read_file(ws / "runs/lines/rank-0.log");
  // Each a whole line: the stderr line is not broken by the stdout one.
  EXPECT_TRUE(contains(log, "starting at step 8\n")) << log;
  const std::size_t at = log.find("resumed at batch 9\n");
  ASSERT_NE(at, std::string::npos) << log;
  EXPECT_TRUE(at == 0 || log[at - 1] == '\n' || log[at - 1] == '\r') << log;
  EXPECT_TRUE(contains(log, "10%\r20%\r")) << log;
  EXPECT_TRUE(contains(log, "no newline")) << log;
  EXPECT_TRUE(contains(r.err, "resumed at batch 9\n")) << r.err;
  EXPECT_TRUE(contains(r.out, "starting at step 8\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "no newline")) << r.out;
}

TEST_F(LauncherRanks, EveryRankGetsTheContractAndItsShare) {
  const std::string script = rank_script("");
  const Result r = run(launch({"--workspace", ws.path(), "--name", "r1", "--nproc-per-node", "2",
                               "--batch-size", "8", "--", script}),
                       {}, kOuterVars);
  ASSERT_EQ(r.code, 0) << show(r);
  const auto e0 = read_env_file(scratch / "env-0");
  const auto e1 = read_env_file(scratch / "env-1");
  for (const auto* e : {&e0, &e1}) {
    EXPECT_EQ(e->at("WORLD_SIZE"), "2");
    EXPECT_EQ(e->at("LOCAL_WORLD_SIZE"), "2");
    EXPECT_EQ(e->at("GROUP_RANK"), "0");
    EXPECT_EQ(e->at("MASTER_ADDR"), "127.0.0.1");
    EXPECT_EQ(e->at("DL_DEVICE"), "cpu");
    EXPECT_EQ(e->at("DL_BATCH_SIZE"), "8");
    EXPECT_GE(std::stoi(e->at("DL_CORES")), 1);
    EXPECT_EQ(e->at("DL_PLAN"), real_path(ws.path()) + "/runs/r1/plan.json");
  }
  EXPECT_EQ(e0.at("LOCAL_RANK"), "0");
  EXPECT_EQ(e1.at("RANK"), "1");
  EXPECT_EQ(e1.at("LOCAL_RANK"), "1");
  // One free port, found at start, the same for both.
  EXPECT_EQ(e0.at("MASTER_PORT"), e1.at("MASTER_PORT"));
  EXPECT_GT(std::stoi(e0.at("MASTER_PORT")), 0);
}

TEST_F(LauncherRanks, LogRanksAllPrefixesEveryLine) {
  const std::string script = rank_script("printf 'line one\\nline two\\npartial'\n");
  const Result r = run(launch({"--workspace", ws.path(), "--nproc-per-node", "2", "--log-ranks",
                               "all", "--", script}),
                       {}, kOuterVars);
  ASSERT_EQ(r.code, 0) << show(r);
  for (const char* rank : {"0", "1"}) {
    const std::string p = std::string("[rank ") + rank + "] ";
    EXPECT_TRUE(contains(r.out, p + "line one\n" + p + "line two\n")) << r.out;
    EXPECT_TRUE(contains(r.out, p + "partial\n")) << r.out;
  }
}

// The fault: one rank killed mid-run. Every rank is gone and dl-launch has exited with
// 128+9 and the line within the grace period plus 5 s.
TEST_F(LauncherRanks, RankKilledWithSigkillStopsTheOthers) {
  const double grace = 5;
  const std::string script = rank_script(ready_when_all_started(3) + wait_forever(),
                                         "trap 'echo term > \"$OUT/term-$RANK\"; exit 0' TERM\n");
  Process launcher(launch({"--workspace", ws.path(), "--name", "r1", "--nproc-per-node", "3",
                           "--grace-period", "5", "--", script}),
                   {}, kOuterVars);
  ASSERT_TRUE(launcher.wait_for_line("ready")) << launcher.out();
  const int pids[3] = {pid_of(0), pid_of(1), pid_of(2)};
  const auto killed_at = Clock::now();
  ASSERT_EQ(kill(pids[1], SIGKILL), 0);
  const Result r = launcher.wait(std::chrono::seconds(30));
  const double took = std::chrono::duration<double>(Clock::now() - killed_at).count();
  std::cout << "kill -9 of rank 1 -> dl-launch exited " << r.code << " after " << took << " s\n";
  EXPECT_EQ(r.code, 128 + SIGKILL) << show(r);
  EXPECT_LT(took, grace + 5.0);
  EXPECT_TRUE(contains(r.err, "rank 1 died of signal 9")) << r.err;
  EXPECT_TRUE(contains(r.err, "/runs/r1/rank-1.log")) << r.err;
  for (int rank : {0, 2}) {
    EXPECT_TRUE(file_exists(scratch / ("term-" + std::to_string(rank))))
        << "rank " << rank << " was not sent SIGTERM";
  }
  for (int pid : pids) EXPECT_NE(kill(pid, 0), 0) << "pid " << pid << " is still there";
}

TEST_F(LauncherRanks, RankExiting3StopsTheOthersAndIsTheCode) {
  const std::string script =
      rank_script(ready_when_all_started(2) +
                      "if [ \"$RANK\" = 1 ]; then\n"
                      "  while [ ! -f \"$OUT/pid-0\" ]; do sleep 0.02; done\n"
                      "  echo 'rank 1 gives up' >&2; exit 3\n"
                      "fi\n" +
                      wait_forever(),
                  "trap 'echo term > \"$OUT/term-$RANK\"; exit 0' TERM\n");
  const auto start = Clock::now();
  const Result r = run(launch({"--workspace", ws.path(), "--name", "r1", "--nproc-per-node", "2",
                               "--grace-period", "5", "--", script}),
                       {}, kOuterVars);
  std::cout << "rank 1 exit 3 -> dl-launch exited " << r.code << " after "
            << std::chrono::duration<double>(Clock::now() - start).count() << " s from start\n";
  EXPECT_EQ(r.code, 3) << show(r);
  EXPECT_TRUE(contains(r.err, "rank 1 exited with code 3")) << r.err;
  EXPECT_TRUE(contains(r.err, "rank-1.log")) << r.err;
  EXPECT_TRUE(file_exists(scratch / "term-0"));
  EXPECT_TRUE(contains(read_file(ws / "runs/r1/rank-1.log"), "rank 1 gives up"));
}

// --max-restarts 2: rank 1 fails in its first two attempts (exit 3, then SIGKILL), so the group
// is started again twice, one line each naming the rank and the cause, the restarts with
// DL_RESUME=true once last.pt exists; the third attempt succeeds: exit 0. A third failure would
// end it with the first failure's code; an exit of 64-79 is not retried.
TEST_F(LauncherRanks, MaxRestartsStartsEveryRankAgainUntilTheyFinish) {
  const std::string script = rank_script(
      count_attempts() +
      "echo \"$DL_RESUME\" >> \"$OUT/resume-$RANK\"\n"
      "if [ \"$RANK\" = 1 ] && [ $n = 1 ]; then touch \"$DL_RUN_DIR/last.pt\"; exit 3; fi\n"
      "if [ \"$RANK\" = 1 ] && [ $n = 2 ]; then kill -9 $$; fi\n"
      "exit 0\n");
  const Result r = run(launch({"--workspace", ws.path(), "--name", "re", "--nproc-per-node", "2",
                               "--grace-period", "5", "--max-restarts", "2", "--", script}),
                       {}, kOuterVars);
  EXPECT_EQ(r.code, 0) << show(r);
  EXPECT_TRUE(contains(r.err,
                       "restart 1 of 2 (--max-restarts): rank 1 exited with code 3; "
                       "starting all 2 local ranks again, resuming from " +
                           ws.path() + "/runs/re/last.pt"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "restart 2 of 2 (--max-restarts): rank 1 died of signal 9")) << r.err;
  EXPECT_EQ(read_file(scratch / "attempts-1"), "3\n");
  // The first attempt as started; the restarts resume. (Rank 0 may be stopped before its script
  // counts an attempt that rank 1 ends at once; the last attempt it runs to its end.)
  EXPECT_EQ(read_file(scratch / "resume-1"), "\ntrue\ntrue\n");
  const std::string rank0 = read_file(scratch / "resume-0");
  EXPECT_TRUE(rank0.size() >= 5 && rank0.substr(rank0.size() - 5) == "true\n") << rank0;
}

TEST_F(LauncherRanks, MaxRestartsUsedUpEndsWithTheFirstFailuresCode) {
  const std::string script = rank_script(count_attempts() +
                                         "if [ \"$RANK\" = 1 ] && [ $n = 1 ]; then exit 3; fi\n"
                                         "if [ \"$RANK\" = 1 ]; then kill -9 $$; fi\n"
                                         "exit 0\n");
  const Result r = run(launch({"--workspace", ws.path(), "--name", "up", "--nproc-per-node", "2",
                               "--grace-period", "5", "--max-restarts", "2", "--", script}),
                       {}, kOuterVars);
  EXPECT_EQ(r.code, 3) << show(r);
  EXPECT_TRUE(contains(r.err, "starting over: no last.pt was written yet")) << r.err;
  EXPECT_TRUE(contains(r.err,
                       "rank 1 died of signal 9 (Killed): the 2 restart(s) of "
                       "--max-restarts are used up; exit 3, the first failure's"))
      << r.err;
  EXPECT_EQ(read_file(scratch / "attempts-1"), "3\n");

  // Bad data (65) is not retried.
  const std::string bad = rank_script(
      "echo x >> \"$OUT/bad-$RANK\"\n"
      "if [ \"$RANK\" = 1 ]; then exit 65; fi\n"
      "exit 0\n");
  const Result b = run(launch({"--workspace", ws.path(), "--name", "bad", "--nproc-per-node", "2",
                               "--max-restarts", "2", "--", bad}),
                       {}, kOuterVars);
  EXPECT_EQ(b.code, 65) << show(b);
  EXPECT_TRUE(contains(b.err, "not restarting (--max-restarts): exit 65 is bad settings or data"))
      << b.err;
  EXPECT_EQ(read_file(scratch / "bad-1"), "x\n");
}

TEST_F(LauncherRanks, RankIgnoringSigtermIsKilledAfterTheGracePeriod) {
  const std::string script = rank_script(
      "if [ \"$RANK\" = 1 ]; then\n"
      "  while [ ! -f \"$OUT/pid-0\" ]; do sleep 0.02; done\n"
      "  exit 4\n"
      "fi\n" +
          ready_when_all_started(2) + "while :; do sleep 0.1; done\n",
      "[ \"$RANK\" = 1 ] || trap '' TERM\n");
  const auto start = Clock::now();
  const Result r = run(launch({"--workspace", ws.path(), "--nproc-per-node", "2", "--grace-period",
                               "0.5", "--", script}),
                       {}, kOuterVars);
  const double took = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_EQ(r.code, 4) << show(r);  // the first failure's code, not the kill's
  EXPECT_TRUE(contains(r.err, "killing them")) << r.err;
  EXPECT_LT(took, 20.0);
}

// Ctrl-C in a terminal: SIGINT to dl-launch; every rank gets it, saves and exits 0.
TEST_F(LauncherRanks, CtrlCReachesEveryRank) {
  const std::string script = rank_script(ready_when_all_started(2) + wait_forever(),
                                         "trap 'echo int > \"$OUT/int-$RANK\"; exit 0' INT\n");
  Process launcher(launch({"--workspace", ws.path(), "--nproc-per-node", "2", "--grace-period", "5",
                           "--", script}),
                   {}, kOuterVars);
  ASSERT_TRUE(launcher.wait_for_line("ready")) << launcher.out();
  launcher.send_signal(SIGINT);
  const Result r = launcher.wait(std::chrono::seconds(20));
  EXPECT_EQ(r.code, 0) << show(r);
  EXPECT_EQ(r.signal, 0) << "dl-launch died of the signal instead of forwarding it";
  EXPECT_TRUE(file_exists(scratch / "int-0"));
  EXPECT_TRUE(file_exists(scratch / "int-1"));
}

// A stop asked of dl-launch is not a failure to restart, even when a rank ends non-zero after it:
// the ranks stop once, with one line at info level.
TEST_F(LauncherRanks, MaxRestartsLeaveAStopAlone) {
  const std::string script =
      rank_script(ready_when_all_started(2) + wait_forever(), "trap 'exit 143' TERM\n");
  Process launcher(launch({"--workspace", ws.path(), "--nproc-per-node", "2", "--grace-period", "5",
                           "--max-restarts", "3", "--", script}),
                   {}, kOuterVars);
  ASSERT_TRUE(launcher.wait_for_line("ready")) << launcher.out();
  launcher.send_signal(SIGTERM);
  const Result r = launcher.wait(std::chrono::seconds(20));
  EXPECT_EQ(r.code, 143) << show(r);
  EXPECT_FALSE(contains(r.err, "restart 1 of 3")) << r.err;
  EXPECT_TRUE(contains(
      r.err, "dl-launch info: not restarting (--max-restarts): dl-launch was asked to stop"))
      << r.err;
}

// A listening socket on a port the kernel picked: the port dl-launch is then told to use.
class Listener {
 public:
  Listener() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        listen(fd_, 1) != 0) {
      throw std::runtime_error("cannot listen on the loopback");
    }
    socklen_t len = sizeof addr;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~Listener() { close(fd_); }
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

TEST_F(LauncherRanks, MasterPortInUseIs75NamingThePortAndTheFix) {
  const Listener busy;
  const std::string port = std::to_string(busy.port());
  const Result r = run(launch({"--workspace", ws.path(), "--nproc-per-node", "2", "--master-port",
                               port, "--", rank_script("")}),
                       {}, kOuterVars);
  EXPECT_EQ(r.code, 75) << show(r);
  EXPECT_TRUE(contains(r.err, "master port " + port + " is in use")) << r.err;
  EXPECT_TRUE(contains(r.err, "--master-port")) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(file_exists(ws / "runs")) << "nothing is written before the check";
  EXPECT_FALSE(file_exists(scratch / "pid-0")) << "a rank started";
}

TEST_F(LauncherRanks, SeveralNodesWithoutMasterAddrIs64) {
  const Result r = run(launch({"--workspace", ws.path(), "--nnodes", "2", "--", rank_script("")}),
                       {}, kOuterVars);
  EXPECT_EQ(r.code, 64) << show(r);
  EXPECT_TRUE(contains(r.err, "--master-addr")) << r.err;
  EXPECT_FALSE(file_exists(ws / "runs"));
}

// --- Schedulers -----------------------------------------------------------------------------

TEST_F(LauncherRanks, SlurmTaskStartsItsOneRank) {
  const Result r = run(launch({"--workspace", ws.path(), "--", rank_script("echo slurm-task")}),
                       {{"SLURM_JOB_ID", "4242"},
                        {"SLURM_STEP_ID", "0"},
                        {"SLURM_PROCID", "3"},
                        {"SLURM_LOCALID", "1"},
                        {"SLURM_NTASKS", "4"},
                        {"SLURM_NODEID", "1"},
                        {"SLURM_JOB_NODELIST", "node[07-08]"},
                        {"SLURM_TASKS_PER_NODE", "2(x2)"}},
                       kOuterVars);
  ASSERT_EQ(r.code, 0) << show(r);
  const auto env = read_env_file(scratch / "env-3");
  EXPECT_EQ(env.at("RANK"), "3");
  EXPECT_EQ(env.at("LOCAL_RANK"), "1");
  EXPECT_EQ(env.at("WORLD_SIZE"), "4");
  EXPECT_EQ(env.at("LOCAL_WORLD_SIZE"), "2");
  EXPECT_EQ(env.at("GROUP_RANK"), "1");
  EXPECT_EQ(env.at("MASTER_ADDR"), "node07");
  EXPECT_EQ(env.at("MASTER_PORT"), std::to_string(10000 + 4242));
  // Every task of the step writes into one run directory; this one is not rank 0.
  const std::string run_dir = ws / "runs/slurm-4242.0";
  EXPECT_TRUE(file_exists(run_dir + "/rank-3.log"));
  EXPECT_TRUE(file_exists(run_dir + "/plan-rank-3.json"));
  EXPECT_FALSE(file_exists(run_dir + "/plan.json"));
  EXPECT_FALSE(contains(r.out, "slurm-task")) << "local rank 1 is not this node's first";
  EXPECT_TRUE(contains(r.out, "scheduler  slurm")) << r.out;
}

TEST_F(LauncherRanks, PyTorchJobPodStartsItsRanks) {
  const Result r = run(launch({"--workspace", ws.path(), "--name", "job", "--", rank_script("")}),
                       {{"MASTER_ADDR", "job-master-0"},
                        {"MASTER_PORT", "23456"},
                        {"RANK", "1"},
                        {"WORLD_SIZE", "2"},
                        {"PET_NPROC_PER_NODE", "2"},
                        {"PET_NNODES", "2"}},
                       kOuterVars);
  ASSERT_EQ(r.code, 0) << show(r);
  for (int rank : {2, 3}) {
    const auto env = read_env_file(scratch / ("env-" + std::to_string(rank)));
    EXPECT_EQ(env.at("WORLD_SIZE"), "4");
    EXPECT_EQ(env.at("LOCAL_RANK"), std::to_string(rank - 2));
    EXPECT_EQ(env.at("GROUP_RANK"), "1");
    EXPECT_EQ(env.at("MASTER_ADDR"), "job-master-0");
    EXPECT_EQ(env.at("MASTER_PORT"), "23456");
    EXPECT_TRUE(file_exists(ws / ("runs/job/rank-" + std::to_string(rank) + ".log")));
  }
}

TEST_F(LauncherRanks, TorchrunWorkerKeepsItsValues) {
  const Result r = run(launch({"--workspace", ws.path(), "--", rank_script("")}),
                       {{"TORCHELASTIC_RUN_ID", "x"},
                        {"RANK", "1"},
                        {"LOCAL_RANK", "1"},
                        {"WORLD_SIZE", "2"},
                        {"LOCAL_WORLD_SIZE", "2"},
                        {"MASTER_ADDR", "127.0.0.1"},
                        {"MASTER_PORT", "29777"}},
                       kOuterVars);
  ASSERT_EQ(r.code, 0) << show(r);
  EXPECT_FALSE(file_exists(scratch / "env-0")) << "torchrun starts the other rank";
  const auto env = read_env_file(scratch / "env-1");
  EXPECT_EQ(env.at("LOCAL_RANK"), "1");
  EXPECT_EQ(env.at("MASTER_PORT"), "29777");
  EXPECT_EQ(env.at("TORCHELASTIC_RUN_ID"), "x");
}

TEST_F(LauncherRanks, CpuBindCoresGivesEachRankItsOwnCpus) {
  const std::string script =
      rank_script("grep Cpus_allowed_list /proc/self/status | cut -f2 > \"$OUT/cpus-$RANK\"\n");
  const Result r = run(launch({"--workspace", ws.path(), "--nproc-per-node", "2", "--cpu-bind",
                               "cores", "--", script}),
                       {}, kOuterVars);
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  if (CPU_COUNT(&set) < 2) {
    EXPECT_EQ(r.code, 64) << show(r);
    EXPECT_TRUE(contains(r.err, "--cpu-bind")) << r.err;
    GTEST_SKIP() << "one CPU in the affinity mask: pinning two ranks is refused, as it should be";
  }
  ASSERT_EQ(r.code, 0) << show(r);
  const std::string a = read_file(scratch / "cpus-0");
  const std::string b = read_file(scratch / "cpus-1");
  EXPECT_FALSE(a.empty());
  EXPECT_NE(a, b) << "both ranks on " << a;
  EXPECT_TRUE(contains(r.out, "pinned to CPUs")) << r.out;
}

TEST_F(LauncherRanks, DryRunShowsTheRanks) {
  const Result r = run(launch({"--workspace", ws.path(), "--dry-run", "--nproc-per-node", "2",
                               "--lr-scaling", "linear", "--lr", "0.01", "--", rank_script("")}),
                       {}, kOuterVars);
  ASSERT_EQ(r.code, 0) << show(r);
  EXPECT_TRUE(contains(r.out, "world      2")) << r.out;
  EXPECT_TRUE(contains(r.out, "global batch 128")) << r.out;
  // A program after -- scales its own learning rate: the plan gives the factor, not --lr's.
  EXPECT_TRUE(contains(r.out, "lr         x2        (the program's learning rate x 128/64"))
      << r.out;
  EXPECT_FALSE(file_exists(ws / "runs"));
}

}  // namespace
}  // namespace dl::test
