// dl_test_child: the program the integration tests have dl-launch start in place of a trainer.
// Each mode reproduces one thing a real training program does that the launcher must handle:
// reading the environment contract, exiting with a code, dying of a signal, saving a checkpoint on
// SIGTERM, ignoring SIGTERM, and running worker processes in its process group.
//
//   env FILE        write "cwd=<dir>", "uid=<uid>", "gid=<gid>", "groups=<supplementary groups>"
//                   and then every NAME=VALUE of the environment to FILE
//   exit N          exit with code N
//   signal N        die of signal N
//   wait-term FILE  print "ready", wait for SIGTERM/SIGINT/SIGHUP, write "saved <signo>" to FILE
//   ignore-term     ignore SIGTERM, print "ready", block forever
//   group FILE      fork a grandchild; on SIGTERM each appends "child|grandchild <signo>" to FILE
//   fds FILE        write "N -> <target>" for each descriptor it was started with (from
//                   /proc/self/fd, before FILE is opened) to FILE, or to stdout when FILE is "-"
//
// Signals are blocked before their handler is installed and waited for with sigsuspend, so a
// signal arriving between the check and the wait is never lost.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>

extern char** environ;

namespace {

volatile sig_atomic_t g_signal = 0;

void record_signal(int sig) {
  g_signal = sig;
}

int usage() {
  std::fputs(
      "usage: dl_test_child env FILE | exit N | signal N | wait-term FILE | ignore-term | "
      "group FILE | fds FILE\n",
      stderr);
  return 2;
}

bool parse_int(const char* text, int* out) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < INT_MIN || v > INT_MAX) return false;
  *out = static_cast<int>(v);
  return true;
}

bool write_all(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// O_APPEND so that the child and the grandchild of "group" can both add their line.
bool write_file(const char* path, const std::string& data, bool append) {
  const int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC), 0644);
  if (fd < 0) {
    std::fprintf(stderr, "dl_test_child: cannot open %s: %s\n", path, std::strerror(errno));
    return false;
  }
  const bool ok = write_all(fd, data);
  return close(fd) == 0 && ok;
}

// The tests read the launcher's stdout up to this line before they send a signal: after it, the
// handlers are in place. write(2) rather than stdio, so nothing sits in a buffer.
bool say_ready() {
  return write_all(STDOUT_FILENO, "ready\n");
}

// Blocks `signals`, records them with a handler, and returns the mask to sigsuspend with (the
// previous mask without them).
sigset_t catch_signals(std::initializer_list<int> signals) {
  sigset_t block;
  sigemptyset(&block);
  for (int s : signals) sigaddset(&block, s);
  sigset_t wait_mask;
  sigprocmask(SIG_BLOCK, &block, &wait_mask);
  struct sigaction sa {};
  sa.sa_handler = record_signal;
  sigemptyset(&sa.sa_mask);
  for (int s : signals) {
    sigaction(s, &sa, nullptr);
    sigdelset(&wait_mask, s);
  }
  return wait_mask;
}

int wait_for_signal(const sigset_t& wait_mask) {
  while (g_signal == 0) sigsuspend(&wait_mask);
  return g_signal;
}

int mode_env(const char* path) {
  char cwd[PATH_MAX];
  if (getcwd(cwd, sizeof cwd) == nullptr) return 3;
  std::string text = std::string("cwd=") + cwd + "\n";
  text += "uid=" + std::to_string(getuid()) + "\ngid=" + std::to_string(getgid()) + "\n";
  gid_t groups[64];
  const int n = getgroups(64, groups);
  text += "groups=";
  for (int i = 0; i < n; ++i) text += (i ? "," : "") + std::to_string(groups[i]);
  text += "\n";
  for (char** e = environ; *e != nullptr; ++e) text += std::string(*e) + "\n";
  return write_file(path, text, false) ? 0 : 3;
}

int mode_fds(const char* path) {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return 3;
  std::string text;
  for (dirent* e; (e = readdir(dir)) != nullptr;) {
    if (e->d_name[0] == '.' || std::atoi(e->d_name) == dirfd(dir)) continue;
    char target[PATH_MAX];
    const std::string link = std::string("/proc/self/fd/") + e->d_name;
    const ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
    text += std::string(e->d_name) + " -> " + (n < 0 ? "?" : std::string(target, n)) + "\n";
  }
  closedir(dir);
  if (std::strcmp(path, "-") == 0) return write_all(STDOUT_FILENO, text) ? 0 : 3;
  return write_file(path, text, false) ? 0 : 3;
}

int mode_signal(int sig) {
  // The launcher restores its own mask in the child; make sure neither a handler nor the mask
  // saves us from the signal.
  struct sigaction sa {};
  sa.sa_handler = SIG_DFL;
  sigemptyset(&sa.sa_mask);
  sigaction(sig, &sa, nullptr);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  sigprocmask(SIG_UNBLOCK, &set, nullptr);
  raise(sig);
  std::fprintf(stderr, "dl_test_child: still alive after raising signal %d\n", sig);
  return 3;
}

int mode_wait_term(const char* path) {
  const sigset_t wait_mask = catch_signals({SIGTERM, SIGINT, SIGHUP});
  if (!say_ready()) return 3;
  const int sig = wait_for_signal(wait_mask);
  // What a trainer does on docker stop: write its checkpoint, then exit cleanly.
  return write_file(path, "saved " + std::to_string(sig) + "\n", false) ? 0 : 3;
}

int mode_ignore_term() {
  signal(SIGTERM, SIG_IGN);
  if (!say_ready()) return 3;
  for (;;) pause();
}

int mode_group(const char* path) {
  int ready_pipe[2];
  if (pipe(ready_pipe) != 0) return 3;
  // Blocked before the fork, so a SIGTERM that comes early stays pending in whichever process it
  // was sent to instead of killing it.
  const sigset_t wait_mask = catch_signals({SIGTERM});
  const pid_t pid = fork();
  if (pid < 0) return 3;
  if (pid == 0) {
    close(ready_pipe[0]);
    // The grandchild's own handler (the inherited one would do, but a worker installs its own).
    catch_signals({SIGTERM});
    const bool told = write_all(ready_pipe[1], "r");
    close(ready_pipe[1]);
    if (!told) _exit(3);
    const int sig = wait_for_signal(wait_mask);
    _exit(write_file(path, "grandchild " + std::to_string(sig) + "\n", true) ? 0 : 3);
  }
  close(ready_pipe[1]);
  char byte = 0;
  ssize_t n;
  do {
    n = read(ready_pipe[0], &byte, 1);
  } while (n < 0 && errno == EINTR);
  close(ready_pipe[0]);
  if (n != 1) return 3;  // the grandchild died before it was ready
  if (!say_ready()) return 3;

  const int sig = wait_for_signal(wait_mask);
  const bool wrote = write_file(path, "child " + std::to_string(sig) + "\n", true);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return 3;
  }
  // Exit 0 only when the grandchild also handled the signal and exited cleanly.
  return wrote && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 3;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  const std::string mode = argv[1];
  if (mode == "ignore-term" && argc == 2) return mode_ignore_term();
  if (argc != 3) return usage();
  const char* arg = argv[2];
  if (mode == "env") return mode_env(arg);
  if (mode == "wait-term") return mode_wait_term(arg);
  if (mode == "group") return mode_group(arg);
  if (mode == "fds") return mode_fds(arg);
  int n = 0;
  if (!parse_int(arg, &n)) return usage();
  if (mode == "exit") return n;
  if (mode == "signal") return mode_signal(n);
  return usage();
}
