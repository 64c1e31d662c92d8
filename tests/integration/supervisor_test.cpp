// supervise() on its own (launcher/supervisor.h), starting the helper child: the program's exit
// code passes through, death by signal N is 128+N, a stop signal reaches the program's whole
// process group, and a program still running a grace period later is killed.
#include "launcher/supervisor.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <string>
#include <thread>

#include "core/errors.h"
#include "support/build_paths.h"
#include "support/files.h"
#include "support/matchers.h"
#include "support/temp_dir.h"

namespace dl::test {
namespace {

using Clock = std::chrono::steady_clock;

const std::string kChild = dl::test::kTestChild;

// The child run through a shell that sends its stdout (where it says "ready") to `ready_file`;
// the shell execs it, so the program supervise() started is the child itself.
SpawnSpec child_with_ready_file(const std::string& args, const std::string& ready_file,
                                const std::string& cwd) {
  SpawnSpec spec;
  spec.argv = {"/bin/sh", "-c", "exec '" + kChild + "' " + args + " >'" + ready_file + "'"};
  spec.cwd = cwd;
  return spec;
}

// Sends `sig` to this thread (the one in supervise()) once `ready_file` says "ready"; gives up
// after 30 s. The helper thread blocks the stop signals, as supervise() does on its own thread,
// so the signal can only be taken by supervise().
class SignalWhenReady {
 public:
  SignalWhenReady(std::string ready_file, int sig)
      : target_(pthread_self()), thread_([this, file = std::move(ready_file), sig] {
          sigset_t set;
          sigemptyset(&set);
          for (int s : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&set, s);
          pthread_sigmask(SIG_BLOCK, &set, nullptr);
          const auto deadline = Clock::now() + std::chrono::seconds(30);
          while (!contains(read_file(file), "ready\n")) {
            if (Clock::now() >= deadline) return;
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
          }
          sent_at_ = Clock::now();
          pthread_kill(target_, sig);
        }) {}
  ~SignalWhenReady() { join(); }
  SignalWhenReady(const SignalWhenReady&) = delete;
  SignalWhenReady& operator=(const SignalWhenReady&) = delete;

  void join() {
    if (thread_.joinable()) thread_.join();
  }
  Clock::time_point sent_at() const { return sent_at_; }

 private:
  pthread_t target_;
  Clock::time_point sent_at_{};
  std::thread thread_;
};

TEST(Supervisor, ExitCodePassesThrough) {
  TempDir dir;
  for (const char* code : {"0", "3", "42"}) {
    SpawnSpec spec;
    spec.argv = {kChild, "exit", code};
    spec.cwd = dir.path();
    EXPECT_EQ(supervise(spec), std::stoi(code)) << "exit " << code;
  }
}

TEST(Supervisor, DeathBySignalIs128PlusN) {
  TempDir dir;
  SpawnSpec spec;
  spec.argv = {kChild, "signal", std::to_string(SIGKILL)};
  spec.cwd = dir.path();
  EXPECT_EQ(supervise(spec), 128 + SIGKILL);
  spec.argv = {kChild, "signal", std::to_string(SIGUSR1)};
  EXPECT_EQ(supervise(spec), 128 + SIGUSR1);
}

TEST(Supervisor, ProgramGetsTheWorkingDirectoryAndTheEnvironment) {
  TempDir dir;
  SpawnSpec spec;
  spec.argv = {kChild, "env", dir / "env.txt"};
  spec.cwd = dir.path();
  spec.env = {{"DL_SUPERVISOR_TEST", "forty two"}};
  ASSERT_EQ(supervise(spec), 0);
  const std::string env = read_file(dir / "env.txt");
  EXPECT_TRUE(contains(env, "cwd=" + real_path(dir.path()) + "\n")) << env;
  EXPECT_TRUE(contains(env, "\nDL_SUPERVISOR_TEST=forty two\n")) << env;
}

TEST(Supervisor, ProgramThatCannotStartIs126) {
  TempDir dir;
  SpawnSpec spec;
  spec.argv = {dir / "no-such-program"};
  spec.cwd = dir.path();
  try {
    supervise(spec);
    FAIL() << "supervise() started a program that does not exist";
  } catch (const UserError& e) {
    EXPECT_EQ(e.code(), exit_code::kNotExecutable);
    EXPECT_TRUE(contains(e.what(), "no-such-program")) << e.what();
  }
}

TEST(Supervisor, SigtermIsForwardedAndTheProgramsCodeReturned) {
  TempDir dir;
  SpawnSpec spec =
      child_with_ready_file("wait-term '" + (dir / "saved") + "'", dir / "ready", dir.path());
  SignalWhenReady signal(dir / "ready", SIGTERM);
  EXPECT_EQ(supervise(spec), 0);  // the child saved and exited cleanly
  signal.join();
  EXPECT_EQ(read_file(dir / "saved"), "saved " + std::to_string(SIGTERM) + "\n");
}

TEST(Supervisor, SignalReachesTheWholeProcessGroup) {
  TempDir dir;
  SpawnSpec spec =
      child_with_ready_file("group '" + (dir / "log") + "'", dir / "ready", dir.path());
  SignalWhenReady signal(dir / "ready", SIGTERM);
  EXPECT_EQ(supervise(spec), 0);  // 0 only when the grandchild handled it too
  signal.join();
  const std::string log = read_file(dir / "log");
  EXPECT_TRUE(contains(log, "child " + std::to_string(SIGTERM) + "\n")) << log;
  EXPECT_TRUE(contains(log, "grandchild " + std::to_string(SIGTERM) + "\n")) << log;
}

TEST(Supervisor, ProgramIgnoringSigtermIsKilledAfterTheGracePeriod) {
  TempDir dir;
  SpawnSpec spec = child_with_ready_file("ignore-term", dir / "ready", dir.path());
  spec.grace_seconds = 0.5;
  SignalWhenReady signal(dir / "ready", SIGTERM);
  const int code = supervise(spec);
  const auto ended = Clock::now();
  signal.join();
  EXPECT_EQ(code, 128 + SIGKILL);
  const double waited = std::chrono::duration<double>(ended - signal.sent_at()).count();
  EXPECT_GE(waited, 0.5);
  EXPECT_LT(waited, 10.0);  // killed, not waited out (generous for a busy machine)
}

}  // namespace
}  // namespace dl::test
