// fork/exec with two pipes and poll(); nothing is allocated between fork and exec. The child leads
// a process group of its own, so that a stop (stop_request.h), a deadline or a missing handshake
// kills it with whatever it started (a DataLoader's workers): a Ctrl-C reaches the launcher, which
// sees it within 100 ms, kills the group and reaps the child before it throws StopRequested.
// A probe runs in the workspace as the program will, with its owner's identity: as root it would
// read (and run, for a TorchScript model) whatever the workspace's owner put there with root's
// rights.
#include "launcher/captured_run.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <set>

#include "launcher/stop_request.h"

extern char** environ;

namespace dl {
namespace {

using Clock = std::chrono::steady_clock;

void close_fd(int* fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

// What is kept of a program's output: its head and its tail (where a probe's report is).
constexpr std::size_t kKeptHead = 64 << 10;
constexpr std::size_t kKeptTail = 4 << 20;

// Appends, dropping the middle of an output that outgrows its head and tail.
void append_bounded(std::string* into, const char* data, std::size_t n) {
  into->append(data, n);
  if (into->size() <= kKeptHead + 2 * kKeptTail) return;
  const std::size_t cut = into->size() - kKeptHead - kKeptTail;
  into->replace(kKeptHead, cut, "\n[" + std::to_string(cut) + " bytes of output left out]\n");
}

// Reads what is there; false at end of file.
bool drain(int fd, std::string* into) {
  char buf[65536];
  while (true) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      append_bounded(into, buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return true;
    return false;
  }
}

// The launcher's environment with `env` on top, as NAME=value strings for execve.
std::vector<std::string> exec_environment(const CapturedRun::Env& env) {
  std::vector<std::string> env_strings;
  std::set<std::string> overridden;
  for (const auto& [k, v] : env) overridden.insert(k);
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    if (overridden.count(entry.substr(0, entry.find('='))) == 0) env_strings.push_back(entry);
  }
  // A name given twice takes its last value (getenv would find the first).
  for (std::size_t i = 0; i < env.size(); ++i) {
    bool later = false;
    for (std::size_t j = i + 1; j < env.size() && !later; ++j) later = env[j].first == env[i].first;
    if (!later) env_strings.push_back(env[i].first + "=" + env[i].second);
  }
  return env_strings;
}

// The null-terminated array of pointers into `strings` that execve takes.
std::vector<char*> pointers_to(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (auto& s : strings) pointers.push_back(s.data());
  pointers.push_back(nullptr);
  return pointers;
}

// Both pipes, close-on-exec; on failure none is left open and `error` says why.
bool open_pipes(int out_pipe[2], int err_pipe[2], std::string* error) {
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    *error = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    *error = std::string("pipe: ") + std::strerror(errno);
    close(out_pipe[0]);
    close(out_pipe[1]);
    return false;
  }
  return true;
}

// Who the child becomes before it touches anything: nobody else when `change` is false.
struct ChildUser {
  bool change = false;
  uid_t uid = 0;
  gid_t gid = 0;
};

// In the child, between fork and exec: async-signal-safe calls only.
[[noreturn]] void exec_child(int null_fd, int out_fd, int err_fd, const ChildUser& user,
                             const char* cwd, char* const args[], char* const envp[]) {
  setpgid(0, 0);
  if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
  dup2(out_fd, STDOUT_FILENO);
  dup2(err_fd, STDERR_FILENO);
  // Groups first, the uid last: once the uid is dropped, the rest is not allowed.
  if (user.change &&
      (setgroups(1, &user.gid) != 0 || setgid(user.gid) != 0 || setuid(user.uid) != 0)) {
    const char msg[] = "cannot take the workspace owner's identity\n";
    (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
    _exit(126);
  }
  if (chdir(cwd) != 0) {
    const char msg[] = "cannot enter the working directory\n";
    (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
    _exit(127);
  }
  execve(args[0], args, envp);
  const char msg[] = "cannot execute the program\n";
  (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
  _exit(errno == ENOENT ? 127 : 126);
}

// How often the loop looks at a stop request and `stop_when` while the child is quiet; a signal
// itself ends the poll at once.
constexpr long long kLookEveryMs = 100;

// Reads both pipes until they close, the deadline passes, a stop is requested or `stop_when` says
// so; then the child's group is killed.
void collect_output(pid_t pid, int fds[2], double timeout_seconds,
                    const std::function<bool()>& stop_when, CapturedRun* r, int* status,
                    bool* reaped) {
  std::string* into[2] = {&r->out, &r->err};
  for (int i = 0; i < 2; ++i) fcntl(fds[i], F_SETFL, fcntl(fds[i], F_GETFL) | O_NONBLOCK);
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(std::max(0.0, timeout_seconds)));
  while (fds[0] >= 0 || fds[1] >= 0) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      r->timed_out = true;
      kill(-pid, SIGKILL);
      break;
    }
    if (stop_requested()) {
      kill(-pid, SIGKILL);
      break;
    }
    if (stop_when && stop_when()) {
      r->stopped = true;
      kill(-pid, SIGKILL);
      break;
    }
    pollfd p[2];
    nfds_t n = 0;
    int which[2];
    for (int i = 0; i < 2; ++i) {
      if (fds[i] < 0) continue;
      p[n] = {fds[i], POLLIN, 0};
      which[n++] = i;
    }
    const int ready = poll(p, n, static_cast<int>(std::min<long long>(left, kLookEveryMs)));
    if (ready < 0 && errno != EINTR) break;
    for (nfds_t j = 0; j < n && ready > 0; ++j) {
      if (p[j].revents == 0) continue;
      if (!drain(fds[which[j]], into[which[j]])) close_fd(&fds[which[j]]);
    }
    // The child has ended while something it started (a DataLoader worker, a server) still holds
    // the pipes: what the child wrote is in them already; the rest is not its output (and a worker
    // that outlives it must not hold the probe until its deadline).
    if (waitpid(pid, status, WNOHANG) == pid) {
      *reaped = true;
      for (int i = 0; i < 2; ++i) {
        if (fds[i] >= 0) drain(fds[i], into[i]);
      }
      break;
    }
  }
  close_fd(&fds[0]);
  close_fd(&fds[1]);
}

// Reaps the child (unless `reaped`) and records how it ended: its exit code, or 128+N for
// signal N.
void wait_for_exit(pid_t pid, bool reaped, int status, CapturedRun* r) {
  while (!reaped && waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) {
    r->code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r->signal = WTERMSIG(status);
    r->code = 128 + r->signal;
  }
}

}  // namespace

CapturedRun run_captured(const std::vector<std::string>& argv, const std::string& cwd,
                         const CapturedRun::Env& env, double timeout_seconds,
                         const std::optional<Identity>& identity,
                         const std::function<bool()>& stop_when) {
  // A stop that came between two probes starts no further one.
  throw_if_stop_requested();
  CapturedRun r;
  ChildUser user;
  if (identity) user = {true, identity->uid, identity->gid};
  // Everything the child needs is built before fork: after it, only async-signal-safe calls.
  std::vector<std::string> env_strings = exec_environment(env);
  const std::vector<char*> envp = pointers_to(env_strings);
  std::vector<std::string> argv_copy = argv;
  const std::vector<char*> args = pointers_to(argv_copy);

  int out_pipe[2], err_pipe[2];
  if (!open_pipes(out_pipe, err_pipe, &r.start_error)) return r;
  const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t pid = fork();
  if (pid == 0) {
    exec_child(null_fd, out_pipe[1], err_pipe[1], user, cwd.c_str(), args.data(), envp.data());
  }
  if (pid > 0) setpgid(pid, pid);  // also here, so the group exists before it is killed
  if (null_fd >= 0) close(null_fd);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (pid < 0) {
    r.start_error = std::string("fork: ") + std::strerror(errno);
    close(out_pipe[0]);
    close(err_pipe[0]);
    return r;
  }

  int fds[2] = {out_pipe[0], err_pipe[0]};
  int status = 0;
  bool reaped = false;
  collect_output(pid, fds, timeout_seconds, stop_when, &r, &status, &reaped);
  wait_for_exit(pid, reaped, status, &r);
  if (stop_requested()) {
    // Also where the child ended just before the loop saw the request: what it started goes
    // too, and its answer, whatever it was, is not used.
    kill(-pid, SIGKILL);
    throw_if_stop_requested();
  }
  return r;
}

}  // namespace dl
