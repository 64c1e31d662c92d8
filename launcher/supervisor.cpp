// Spawning with Boost.Process and supervising with sigtimedwait: the stop signals and SIGCHLD are
// blocked in the launcher and taken synchronously, so there is no handler and no race between a
// signal and the child's exit.
#include "launcher/supervisor.h"

#include <grp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <spdlog/spdlog.h>
#include <boost/process/args.hpp>
#include <boost/process/child.hpp>
#include <boost/process/env.hpp>
#include <boost/process/environment.hpp>
#include <boost/process/exe.hpp>
#include <boost/process/extend.hpp>
#include <boost/process/start_dir.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <system_error>

#include "core/errors.h"
#include "core/text.h"
#include "launcher/exit_status.h"
#include "launcher/stop_request.h"

namespace bp = boost::process;

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

// The launcher's environment with the spec's variables on top. set(), not env[k]: Boost 1.74's
// environment::find (behind operator[]) compares "k=" with each entry without minding the entry's
// length, reading past any shorter one (AddressSanitizer: heap-buffer-overflow); set() checks it.
bp::environment program_environment(const SpawnSpec& spec) {
  bp::environment env = boost::this_process::environment();
  for (const auto& [k, v] : spec.env) env.set(k, v);
  return env;
}

// Starts the program as `spec` says; throws UserError 126 when it cannot be started.
bp::child start_child(const SpawnSpec& spec, bp::environment& env,
                      const std::vector<std::string>& args, const sigset_t& old_mask,
                      bool own_terminal) {
  const bool switch_user = spec.identity.has_value();
  const uid_t uid = switch_user ? spec.identity->uid : 0;
  const gid_t gid = switch_user ? spec.identity->gid : 0;
  try {
    return bp::child(
        bp::exe = spec.argv[0], bp::args = args, bp::start_dir = spec.cwd, env,
        bp::extend::on_exec_setup = [&old_mask, own_terminal, switch_user, uid, gid](auto& exec) {
          // Groups first, the uid last: once the uid is dropped, the rest is not allowed.
          if (switch_user && (setgroups(1, &gid) != 0 || setgid(gid) != 0 || setuid(uid) != 0)) {
            exec.set_error(std::error_code(errno, std::system_category()),
                           "cannot switch to the workspace owner's uid and gid");
            _exit(exit_code::kNotExecutable);
          }
          // In the child, between fork and exec: a group of its own (the launcher
          // signals the group), the terminal when the launcher had it, and the signal
          // mask the launcher had.
          setpgid(0, 0);
          if (own_terminal) {
            signal(SIGTTOU, SIG_IGN);
            tcsetpgrp(STDIN_FILENO, getpgrp());
            signal(SIGTTOU, SIG_DFL);
          }
          pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
        });
  } catch (const bp::process_error& e) {
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
bool wait_for_child(bp::child& child, const sigset_t& set, double grace_seconds) {
  const pid_t pid = child.id();
  std::optional<Clock::time_point> kill_at;
  bool killed = false;
  while (true) {
    if (!child.running()) break;
    auto wait = std::chrono::duration_cast<Clock::duration>(kPollInterval);
    if (kill_at) wait = std::min(wait, std::max(Clock::duration::zero(), *kill_at - Clock::now()));
    const timespec ts = to_timespec(wait);
    siginfo_t info{};
    const int sig = sigtimedwait(&set, &info, &ts);
    if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
      forward_stop_signal(sig, pid, grace_seconds, &kill_at);
    }
    if (kill_at && !killed && Clock::now() >= *kill_at && child.running()) {
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

  bp::environment env = program_environment(spec);
  const std::vector<std::string> args(spec.argv.begin() + 1, spec.argv.end());
  // On a terminal where the launcher is in the foreground, the program's group takes the
  // terminal over (as a shell does for a job): otherwise a program that reads stdin (input(),
  // pdb) is stopped by SIGTTIN, and Ctrl-C would reach the launcher only.
  const bool own_terminal = isatty(STDIN_FILENO) != 0 && tcgetpgrp(STDIN_FILENO) == getpgrp();
  bp::child child = start_child(spec, env, args, old_mask, own_terminal);
  const pid_t pid = child.id();
  setpgid(pid, pid);  // also here, so the group exists before any signal is forwarded
  const TerminalBack terminal_back{own_terminal};
  if (own_terminal) set_foreground_group(pid);

  const bool stopped = wait_for_child(child, set, spec.grace_seconds);
  // Signals that arrived after the program ended are consumed here rather than left pending for
  // the restored mask, where their default action would kill the launcher before it can return
  // the program's exit code.
  const timespec zero{};
  while (sigtimedwait(&set, nullptr, &zero) > 0) {
  }
  const int status = child.native_exit_code();
  if (end != nullptr) {
    end->stop_requested = stopped;
    end->failed_rank = 0;
    end->cause = describe_end(status);
  }
  return decode_status(status);
}

}  // namespace dl
