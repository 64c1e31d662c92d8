// spawn_child (core/spawn.h) starting /bin programs: the environment merge, only 0, 1, 2 and the
// descriptors passed on purpose reach the child, a folder the child's user may not enter is
// refused before exec with the folder named, the exec error names the program, the user is
// switched, and the parent-death signal survives the switch (the kernel clears it on a change of
// credentials, so the order matters).
#include "core/spawn.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "support/files.h"
#include "support/matchers.h"
#include "support/temp_dir.h"

namespace dl::test {
namespace {

constexpr uid_t kNobody = 65534;

int wait_status(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// Runs `spec` with stdout into `out` (a file it creates), waits for it and returns its output.
std::string run_to_file(ChildSpec spec, const std::string& out) {
  const int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  EXPECT_GE(fd, 0);
  spec.stdout_fd = fd;
  const pid_t pid = spawn_child(spec);
  close(fd);
  const int status = wait_status(pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  return read_file(out);
}

// The descriptor numbers in `ls -l /proc/self/fd/` output, without the one ls reads the folder
// through ("N -> /proc/<pid>/fd").
std::set<int> listed_fds(const std::string& ls_output) {
  std::set<int> fds;
  std::istringstream lines(ls_output);
  for (std::string line; std::getline(lines, line);) {
    const auto arrow = line.find(" -> ");
    if (arrow == std::string::npos) continue;
    const std::string target = line.substr(arrow + 4);
    if (target.rfind("/proc/", 0) == 0 && target.size() > 3 &&
        target.compare(target.size() - 3, 3, "/fd") == 0) {
      continue;
    }
    const auto space = line.rfind(' ', arrow - 1);
    fds.insert(std::stoi(line.substr(space + 1, arrow - space - 1)));
  }
  return fds;
}

TEST(ChildEnvironment, OverridesReplaceNamesAndTheLastValueWins) {
  char a[] = "A=1", b[] = "B=2", c[] = "C=3", bare[] = "NOT_A_VARIABLE";
  char* base[] = {a, b, bare, c, nullptr};
  const std::vector<std::string> env =
      child_environment({{"B", "x"}, {"D", "y"}, {"B", "z"}}, base);
  EXPECT_EQ(env, (std::vector<std::string>{"A=1", "C=3", "B=z", "D=y"}));
  EXPECT_EQ(child_environment({}, base), (std::vector<std::string>{"A=1", "B=2", "C=3"}));
}

TEST(Spawn, OnlyStdioAndPassedDescriptorsReachTheChild) {
  TempDir dir;
  // One the launcher left inheritable by mistake, one passed on purpose.
  const int stray = open((dir / "stray").c_str(), O_WRONLY | O_CREAT, 0644);
  const int passed = open((dir / "passed").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(stray, 3);
  ASSERT_GE(passed, 3);
  ChildSpec spec;
  spec.argv = {"/bin/ls", "-l", "/proc/self/fd/"};
  spec.stdin_fd = kNullFd;
  spec.pass_fds = {passed};
  const std::string out = run_to_file(spec, dir / "ls.txt");
  close(stray);
  close(passed);
  EXPECT_EQ(listed_fds(out), (std::set<int>{0, 1, 2, passed})) << out;
  EXPECT_TRUE(contains(out, "0 -> /dev/null")) << out;
  EXPECT_TRUE(contains(out, std::to_string(passed) + " -> " + real_path(dir / "passed"))) << out;
  EXPECT_FALSE(contains(out, "stray")) << out;
}

TEST(Spawn, ExecErrorNamesTheProgram) {
  TempDir dir;
  ChildSpec spec;
  spec.argv = {dir / "no-such-program"};
  try {
    spawn_child(spec);
    FAIL() << "a program that does not exist was started";
  } catch (const SpawnError& e) {
    EXPECT_EQ(std::string(e.what()),
              "cannot execute " + (dir / "no-such-program") + ": No such file or directory");
    EXPECT_EQ(e.error(), ENOENT);
  }
}

TEST(Spawn, ChildLeadsItsOwnProcessGroup) {
  ChildSpec spec;
  spec.argv = {"/bin/sleep", "30"};
  const pid_t pid = spawn_child(spec);
  EXPECT_EQ(getpgid(pid), pid);
  kill(pid, SIGKILL);
  wait_status(pid);
}

TEST(Spawn, WorkspaceOnlyRootMayEnterIsRefusedBeforeExec) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root, to switch to uid " << kNobody;
  TempDir dir;
  ASSERT_EQ(chmod(dir.path().c_str(), 0755), 0);
  const std::string closed = dir / "closed", open_dir = dir / "open";
  ASSERT_EQ(mkdir(closed.c_str(), 0700), 0);
  ASSERT_EQ(mkdir(open_dir.c_str(), 0755), 0);
  ChildSpec spec;
  spec.argv = {"/usr/bin/id"};
  spec.user = Identity{kNobody, kNobody, "nobody", ""};
  spec.cwd = open_dir;
  // Where the user may enter, the child runs as them, with their group alone.
  EXPECT_EQ(run_to_file(spec, dir / "id.txt").substr(0, 10), "uid=65534(");
  EXPECT_TRUE(contains(read_file(dir / "id.txt"), "groups=65534(")) << read_file(dir / "id.txt");
  EXPECT_FALSE(contains(read_file(dir / "id.txt"), ",")) << read_file(dir / "id.txt");
  spec.cwd = closed;
  try {
    spawn_child(spec);
    FAIL() << "the child entered " << closed << " as uid " << kNobody;
  } catch (const SpawnError& e) {
    EXPECT_EQ(std::string(e.what()), "cannot enter " + closed + ": Permission denied");
    EXPECT_EQ(e.error(), EACCES);
  }
}

// The child of a thread that ends gets its parent-death signal; with a user switch too.
void expect_killed_when_parent_thread_ends(const std::optional<Identity>& user) {
  ChildSpec spec;
  spec.argv = {"/bin/sleep", "30"};
  spec.parent_death_signal = SIGKILL;
  spec.user = user;
  spec.cwd = "/";
  pid_t pid = -1;
  std::thread([&] { pid = spawn_child(spec); }).join();
  ASSERT_GT(pid, 0);
  const auto start = std::chrono::steady_clock::now();
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0 &&
         std::chrono::steady_clock::now() - start < std::chrono::seconds(10)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!WIFSIGNALED(status)) {
    kill(pid, SIGKILL);
    wait_status(pid);
  }
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << "the child outlived the thread that started it (status " << status << ")";
}

TEST(Spawn, ParentDeathSignalReachesTheChild) {
  expect_killed_when_parent_thread_ends(std::nullopt);
}

TEST(Spawn, ParentDeathSignalSurvivesTheUserSwitch) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root, to switch to uid " << kNobody;
  expect_killed_when_parent_thread_ends(Identity{kNobody, kNobody, "nobody", ""});
}

}  // namespace
}  // namespace dl::test
