// Spawning with spawn_child (core/spawn.h) and supervising with sigtimedwait: the stop signals and
// SIGCHLD are blocked in the launcher and taken synchronously, so there is no handler and no race
// between a signal and the child's exit.
#include "launcher/supervisor.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <spdlog/spdlog.h>
#include <chrono>
#include <cstring>
#include <optional>

#include "core/errors.h"
#include "core/spawn.h"
#include "core/text.h"
#include "launcher/exit_status.h"
#include "launcher/stop_request.h"

namespace dl {
namespace {

using Clock = std::chrono::steady_clock;

// How often the loop looks at the child when no signal arrives; SIGCHLD normally wakes it first.
constexpr auto kPollInterval = std::chrono::milliseconds(200);

sigset_t supervised_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&set, s);
  return set;
}

timespec to_timespec(Clock::duration d) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
  ts.tv_nsec = static_cast<long>(ns % 1'000'000'000);
  return ts;
}

// Restores the launcher's signal mask when supervision ends.
struct MaskRestore {
  sigset_t mask;
  ~MaskRestore() { pthread_sigmask(SIG_SETMASK, &mask, nullptr); }
};

// Makes `pgrp` the terminal's foreground group. From the background this would stop the launcher
// with SIGTTOU, so that is ignored meanwhile.
void set_foreground_group(pid_t pgrp) {
  void (*previous)(int) = signal(SIGTTOU, SIG_IGN);
  tcsetpgrp(STDIN_FILENO, pgrp);
  signal(SIGTTOU, previous);
}

// Takes the terminal back for the launcher's group when supervision ends.
struct TerminalBack {
  bool active;
  ~TerminalBack() {
    if (active) set_foreground_group(getpgrp());
  }
};

// Starts the program as `spec` says; throws UserError 126 when it cannot be started.
pid_t start_child(const SpawnSpec& spec, const sigset_t& old_mask, bool own_terminal) {
  ChildSpec child;
  child.argv = spec.argv;
  child.env = spec.env;
  child.cwd = spec.cwd;
  child.user = spec.identity;
  child.pass_fds = spec.pass_fds;
  // A group of its own (the launcher signals the group), the terminal when the launcher had it,
  // and the signal mask the launcher had. Killed when the launcher dies: SIGTERM, which the
  // trainer takes as a stop and saves a checkpoint on.
  child.new_process_group = true;
  child.take_terminal = own_terminal;
  child.parent_death_signal = SIGTERM;
  child.mask = &old_mask;
  try {
    return spawn_child(child);
  } catch (const SpawnError& e) {
    throw UserError(exit_code::kNotExecutable, "cannot start " + spec.argv[0] + ": " + e.what());
  }
}

// Forwards a stop signal to the program's group; the first one sets the deadline to kill it.
void forward_stop_signal(int sig, pid_t pid, double grace_seconds,
                         std::optional<Clock::time_point>* kill_at) {
  if (!*kill_at) {
    *kill_at = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                  std::chrono::duration<double>(grace_seconds));
    spdlog::warn(
        "{} received: forwarding it to process group {}; killing it in {:g} s if it "
        "has not exited",
        strsignal(sig), pid, grace_seconds);
  } else {
    spdlog::warn("{} received again: forwarding it to process group {}", strsignal(sig), pid);
  }
  kill(-pid, sig);
}

// Waits for the program to end, forwarding stop signals and killing it after the grace period.
// Returns whether a stop signal was forwarded.
// `status` gets its wait status.
bool wait_for_child(pid_t pid, const sigset_t& set, double grace_seconds, int* status) {
  std::optional<Clock::time_point> kill_at;
  bool killed = false;
  while (true) {
    if (waitpid(pid, status, WNOHANG) == pid) break;
    auto wait = std::chrono::duration_cast<Clock::duration>(kPollInterval);
    if (kill_at) wait = std::min(wait, std::max(Clock::duration::zero(), *kill_at - Clock::now()));
    const timespec ts = to_timespec(wait);
    siginfo_t info{};
    const int sig = sigtimedwait(&set, &info, &ts);
    if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
      forward_stop_signal(sig, pid, grace_seconds, &kill_at);
    }
    if (kill_at && !killed && Clock::now() >= *kill_at) {
      spdlog::error("process group {} still running {:g} s after the stop signal: killing it", pid,
                    grace_seconds);
      kill(-pid, SIGKILL);
      killed = true;
    }
  }
  return kill_at.has_value();
}

}  // namespace

int supervise(const SpawnSpec& spec, SupervisedEnd* end) {
  const sigset_t set = supervised_signals();
  sigset_t old_mask;
  pthread_sigmask(SIG_BLOCK, &set, &old_mask);
  const MaskRestore restore{old_mask};
  // A stop signal before the block went to the handler (stop_request.h), one after it waits
  // here: none is lost, and a stop that came first starts nothing.
  if (stop_requested()) throw StopRequested(stop_signal(), "starting " + base_name(spec.argv[0]));

  // On a terminal where the launcher is in the foreground, the program's group takes the
  // terminal over (as a shell does for a job): otherwise a program that reads stdin (input(),
  // pdb) is stopped by SIGTTIN, and Ctrl-C would reach the launcher only.
  const bool own_terminal = isatty(STDIN_FILENO) != 0 && tcgetpgrp(STDIN_FILENO) == getpgrp();
  const pid_t pid = start_child(spec, old_mask, own_terminal);
  const TerminalBack terminal_back{own_terminal};
  if (own_terminal) set_foreground_group(pid);

  int status = 0;
  const bool stopped = wait_for_child(pid, set, spec.grace_seconds, &status);
  // Signals that arrived after the program ended are consumed here rather than left pending for
  // the restored mask, where their default action would kill the launcher before it can return
  // the program's exit code.
  const timespec zero{};
  while (sigtimedwait(&set, nullptr, &zero) > 0) {
  }
  if (end != nullptr) {
    end->stop_requested = stopped;
    end->failed_rank = 0;
    end->cause = describe_end(status);
  }
  return decode_status(status);
}

}  // namespace dl
