// Running a real process in a test (see process.h).
#include "support/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace dl::test {
namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error(what + ": " + std::strerror(errno));
}

bool starts_with(const std::string& s, const char* prefix) {
  return s.rfind(prefix, 0) == 0;
}

// The child's environment: ours without the launcher's inputs, then the test's variables.
std::vector<std::string> child_environment(const EnvVars& extra_env,
                                           const std::vector<std::string>& unset_env) {
  std::set<std::string> drop(unset_env.begin(), unset_env.end());
  for (const auto& kv : extra_env) drop.insert(kv.first);
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    if (starts_with(name, "DL_") || starts_with(name, "FAKE_NVML_") ||
        starts_with(name, "SLURM_") || starts_with(name, "PET_") ||
        starts_with(name, "TORCHELASTIC_") || drop.count(name)) {
      continue;
    }
    env.push_back(entry);
  }
  for (const auto& [name, value] : extra_env) env.push_back(name + "=" + value);
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::max<std::chrono::milliseconds::rep>(0, left.count()));
}

}  // namespace

Process::Process(const std::vector<std::string>& argv, const EnvVars& extra_env,
                 const std::vector<std::string>& unset_env, const std::string& cwd) {
  if (argv.empty()) throw std::invalid_argument("Process: empty argv");
  // Everything the child needs is prepared here: between fork and exec only async-signal-safe
  // calls are allowed.
  std::vector<std::string> args = argv;
  std::string program = argv[0];
  if (program.find('/') == std::string::npos) {
    program = find_program(program);
    if (program.empty()) program = "/nonexistent/" + argv[0];  // execve fails: exit 127
  }
  std::vector<std::string> env = child_environment(extra_env, unset_env);
  std::vector<char*> c_args = c_strings(args);
  std::vector<char*> c_env = c_strings(env);

  // O_CLOEXEC: another test process started later must not hold these pipes open.
  int out_pipe[2];
  int err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) fail("pipe");
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    fail("pipe");
  }
  const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  pid_ = fork();
  if (pid_ < 0) {
    const int err = errno;
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1], null_fd}) {
      if (fd >= 0) close(fd);
    }
    errno = err;
    fail("fork");
  }
  if (pid_ == 0) {
    if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(err_pipe[1], STDERR_FILENO);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGCHLD}) sigaction(s, &dfl, nullptr);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) {
      const char msg[] = "dl-test: cannot change to the working directory\n";
      ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
      (void)ignored;
      _exit(126);
    }
    execve(program.c_str(), c_args.data(), c_env.data());
    const int exec_errno = errno;
    const char msg[] = "dl-test: exec failed\n";
    ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)ignored;
    _exit(exec_errno == ENOENT ? 127 : 126);
  }
  if (null_fd >= 0) close(null_fd);
  close(out_pipe[1]);
  close(err_pipe[1]);
  out_fd_ = out_pipe[0];
  err_fd_ = err_pipe[0];
  // Readable when the process exits, so wait() needs no polling interval (-1 on old kernels).
#ifdef SYS_pidfd_open
  pid_fd_ = static_cast<int>(syscall(SYS_pidfd_open, pid_, 0));
#endif
}

Process::~Process() {
  if (!exited_ && pid_ > 0) {
    kill(pid_, SIGKILL);
    reap(true);
  }
  for (int fd : {out_fd_, err_fd_, pid_fd_}) {
    if (fd >= 0) close(fd);
  }
}

bool Process::pump(int timeout_ms) {
  pollfd fds[3];
  nfds_t n = 0;
  for (int fd : {out_fd_, err_fd_, pid_fd_}) {
    if (fd >= 0) fds[n++] = pollfd{fd, POLLIN, 0};
  }
  // With nothing to watch this waits out the timeout, so callers never spin.
  const int ready = poll(n > 0 ? fds : nullptr, n, timeout_ms);
  if (ready <= 0) return false;
  bool progress = false;
  for (nfds_t i = 0; i < n; ++i) {
    // The pidfd only wakes the poll; the exit is collected by reap().
    if (fds[i].revents == 0 || fds[i].fd == pid_fd_) continue;
    progress = true;
    const bool is_out = fds[i].fd == out_fd_;
    char buf[4096];
    const ssize_t got = read(fds[i].fd, buf, sizeof buf);
    if (got > 0) {
      (is_out ? out_ : err_).append(buf, static_cast<size_t>(got));
    } else if (got == 0 || errno != EINTR) {
      close(fds[i].fd);
      (is_out ? out_fd_ : err_fd_) = -1;
    }
  }
  return progress;
}

bool Process::reap(bool block) {
  if (exited_) return true;
  pid_t r;
  do {
    r = waitpid(pid_, &status_, block ? 0 : WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == pid_) exited_ = true;
  return exited_;
}

bool Process::wait_for_line(const std::string& line, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (true) {
    // Only complete lines count: "ready" must not match the start of "ready-ish" still arriving.
    size_t end;
    while ((end = out_.find('\n', scanned_)) != std::string::npos) {
      const bool match = out_.compare(scanned_, end - scanned_, line) == 0;
      scanned_ = end + 1;
      if (match) return true;
    }
    if (out_fd_ < 0 || Clock::now() >= deadline) return false;
    pump(remaining_ms(deadline));
  }
}

void Process::send_signal(int sig) {
  if (!exited_) kill(pid_, sig);
}

Result Process::wait(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  Result result;
  bool timed_out = false;
  // Pipes reach end of file when the last writer closes them; a grandchild left behind by a
  // broken program could keep them open for ever, so stop at the process's exit instead, after
  // taking what it wrote (already in the pipes by then).
  while (!reap(false)) {
    if (Clock::now() >= deadline) {
      kill(pid_, SIGKILL);
      reap(true);
      timed_out = true;
      break;
    }
    // The pidfd wakes the poll at the exit; without one (kernels before 5.3), look every 100 ms.
    pump(pid_fd_ >= 0 ? remaining_ms(deadline) : std::min(remaining_ms(deadline), 100));
  }
  while (pump(0)) {
  }
  result.out = out_;
  result.err = err_;
  if (timed_out) {
    result.err += "dl-test: timed out after " + std::to_string(timeout.count()) + " ms; killed\n";
    return result;
  }
  if (WIFEXITED(status_)) {
    result.code = WEXITSTATUS(status_);
  } else if (WIFSIGNALED(status_)) {
    result.signal = WTERMSIG(status_);
    result.code = 128 + result.signal;
  }
  return result;
}

Result run(const std::vector<std::string>& argv, const EnvVars& extra_env,
           const std::vector<std::string>& unset_env, const std::string& cwd) {
  Process process(argv, extra_env, unset_env, cwd);
  return process.wait();
}

std::string find_program(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    struct stat st {};
    if (stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return {};
}

std::string show(const Result& r) {
  return "exit " + std::to_string(r.code) + "\n--- stdout\n" + r.out + "--- stderr\n" + r.err;
}

std::vector<std::string> in_directory(const std::string& dir,
                                      const std::vector<std::string>& argv) {
  std::vector<std::string> out = {"/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", dir};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

bool wait_for_output(Process& process, const std::string& needle,
                     std::chrono::milliseconds timeout) {
  // Process::wait_for_line matches whole lines only. Asked for a line that never comes, it reads
  // whatever arrives for up to `slice` and returns early only when stdout has closed; out() then
  // holds everything read, where the needle is looked for. The wait is on the output itself.
  const std::string never = "\x01 no such line \x01";
  constexpr std::chrono::milliseconds slice{50};
  const auto deadline = Clock::now() + timeout;
  while (process.out().find(needle) == std::string::npos) {
    const auto now = Clock::now();
    if (now >= deadline) return false;
    const auto wait = std::min<std::chrono::milliseconds>(
        slice, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now));
    process.wait_for_line(never, wait);
    if (process.out().find(needle) != std::string::npos) return true;
    if (Clock::now() - now < wait) return false;  // returned early: the output has ended
  }
  return true;
}

}  // namespace dl::test
