// spawn_child (core/spawn.h) with two pipes, and poll(). The child leads
// a process group of its own, so that a stop (stop_request.h), a deadline or a missing handshake
// kills it with whatever it started (a DataLoader's workers): a Ctrl-C reaches the launcher, which
// sees it within 100 ms, kills the group and reaps the child before it throws StopRequested.
// A probe runs in the workspace as the program will, with its owner's identity: as root it would
// read (and run, for a TorchScript model) whatever the workspace's owner put there with root's
// rights.
#include "launcher/captured_run.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "core/spawn.h"
#include "launcher/stop_request.h"

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
  int out_pipe[2], err_pipe[2];
  if (!open_pipes(out_pipe, err_pipe, &r.start_error)) return r;
  ChildSpec child;
  child.argv = argv;
  child.env = env;
  child.cwd = cwd;
  child.user = identity;
  child.stdin_fd = kNullFd;
  child.stdout_fd = out_pipe[1];
  child.stderr_fd = err_pipe[1];
  // A group of its own, killed with whatever it started; killed too if the launcher dies.
  child.new_process_group = true;
  child.parent_death_signal = SIGKILL;
  pid_t pid = -1;
  try {
    pid = spawn_child(child);
  } catch (const SpawnError& e) {
    r.start_error = e.what();
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (pid < 0) {
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
