// Each rank started by spawn_child (core/spawn.h: its group, pinning, output, user), and one poll
// loop over a signalfd (the stop signals and SIGCHLD, blocked and read synchronously) and every
// rank's output pipe. No sleeping: the loop wakes on a signal, output, or the kill deadline.
#include "launcher/rank_supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "core/act_as.h"
#include "core/errors.h"
#include "core/fd_io.h"
#include "core/spawn.h"
#include "launcher/exit_status.h"
#include "launcher/stop_request.h"

namespace dl {
namespace {

using Clock = std::chrono::steady_clock;

// An fd closed on scope exit.
struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(Fd&& o) noexcept : fd(o.fd) { o.fd = -1; }
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd = o.fd;
      o.fd = -1;
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  void reset() {
    if (fd >= 0) close(fd);
    fd = -1;
  }
};

// One of a rank's two outputs: the read end of its stdout's pipe or its stderr's, and where a
// shown rank's bytes go on the terminal (dl-launch's own stdout or stderr, as without a pipe).
struct Stream {
  Fd fd;
  int terminal_fd = STDOUT_FILENO;
  std::string partial;      // what the terminal has not had yet: a line not yet ended
  std::string log_partial;  // the same for the log
};

// The end of the last whole line in `text` ('\n', or '\r': a progress bar's update is a line
// too), or 0. Past kMaxHeld bytes without one, everything: a stream that never ends a line is
// passed on as it comes.
constexpr std::size_t kMaxHeld = 65536;
std::size_t whole_lines(const std::string& text) {
  const std::size_t at = text.find_last_of("\n\r");
  if (at != std::string::npos) return at + 1;
  return text.size() > kMaxHeld ? text.size() : 0;
}

struct Rank {
  const RankSpawn* spawn = nullptr;
  std::string log_path;
  Fd log;  // both streams, in the order they were read
  Stream streams[2];
  pid_t pid = -1;
  bool running = false;
  int code = 0;
};

// Creates (or, on --resume, appends to) <dir>/rank-N.log without following a link the user
// planted, refusing anything but a plain file of one link, and gives it to the ranks' user.
// Opened with the owner's credentials (the caller's ActAs), so the file is theirs.
Fd open_log(int dir_fd, const std::string& name, const std::string& path) {
  Fd fd(openat(dir_fd, name.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (fd.fd < 0) {
    throw UserError(exit_code::kCantWrite,
                    "cannot create " + path + " (" + std::strerror(errno) + ")");
  }
  struct stat st {};
  if (fstat(fd.fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1) {
    throw UserError(exit_code::kCantWrite,
                    path + " is not a plain file of its own (a link?): remove it and run again");
  }
  return fd;
}

// Starts one rank; throws UserError 126 when it cannot start.
void start_rank(const RankGroupSpec& spec, Rank& r, const sigset_t& old_mask) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  Fd read_end(pipe_fds[0]), write_end(pipe_fds[1]);
  int stderr_fds[2];
  if (pipe2(stderr_fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  Fd stderr_read(stderr_fds[0]), stderr_write(stderr_fds[1]);

  ChildSpec child;
  child.argv = spec.argv;
  child.env = r.spawn->env;
  child.cwd = spec.cwd;
  child.user = spec.identity;
  child.stdin_fd = kNullFd;
  child.stdout_fd = write_end.fd;
  child.stderr_fd = stderr_write.fd;
  child.cpus = r.spawn->cpus;
  child.pass_fds = spec.pass_fds;
  // A group of its own (a stop signals the rank's group), the launcher's signal mask, and
  // SIGTERM when the launcher dies: a rank then stops as on a stop signal.
  child.new_process_group = true;
  child.parent_death_signal = SIGTERM;
  child.mask = &old_mask;
  try {
    r.pid = spawn_child(child);
  } catch (const SpawnError& e) {
    throw UserError(exit_code::kNotExecutable, "cannot start rank " +
                                                   std::to_string(r.spawn->global_rank) + " (" +
                                                   spec.argv[0] + "): " + e.what());
  }
  r.running = true;
  write_end.reset();
  stderr_write.reset();
  for (Fd* end : {&read_end, &stderr_read}) {
    fcntl(end->fd, F_SETFL, fcntl(end->fd, F_GETFL) | O_NONBLOCK);
  }
  r.streams[0].fd = std::move(read_end);
  r.streams[0].terminal_fd = STDOUT_FILENO;
  r.streams[1].fd = std::move(stderr_read);
  r.streams[1].terminal_fd = STDERR_FILENO;
}

// The ranks' output: every byte to the log; a shown rank's to the terminal, stdout to stdout and
// stderr to stderr; by whole lines (a progress bar's \r ends one), with the rank's prefix when
// lines are prefixed.
class OutputPump {
 public:
  explicit OutputPump(bool prefix) : prefix_(prefix) {}

  // Reads what the stream `s` of `r` has; false at its end.
  bool read_from(Rank& r, Stream& s) {
    char buf[65536];
    while (true) {
      const ssize_t n = read(s.fd.fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK;
      if (n == 0) {
        finish(r, s);
        return false;
      }
      // By whole lines, in the log as on the terminal: the rank's stdout and stderr come through
      // two pipes, and a line written in two pieces (Python's print writes the text, then the
      // newline) must not take in the other stream's line between them.
      s.log_partial.append(buf, static_cast<std::size_t>(n));
      const std::size_t lines = whole_lines(s.log_partial);
      write_fully(r.log.fd, s.log_partial.data(), lines);
      s.log_partial.erase(0, lines);
      if (r.spawn->shown) show(r, s, buf, static_cast<std::size_t>(n));
    }
  }

  void finish(const Rank& r, Stream& s) {
    write_fully(r.log.fd, s.log_partial.data(), s.log_partial.size());
    s.log_partial.clear();
    if (r.spawn->shown && !s.partial.empty()) {
      if (prefix_) {
        emit(r, s, s.partial + "\n");
      } else {
        write_fully(s.terminal_fd, s.partial.data(), s.partial.size());
      }
      s.partial.clear();
    }
    s.fd.reset();
  }

 private:
  void show(const Rank& r, Stream& s, const char* data, std::size_t size) {
    if (!prefix_) {
      s.partial.append(data, size);
      const std::size_t lines = whole_lines(s.partial);
      write_fully(s.terminal_fd, s.partial.data(), lines);
      s.partial.erase(0, lines);
      return;
    }
    s.partial.append(data, size);
    std::size_t start = 0;
    for (std::size_t nl; (nl = s.partial.find('\n', start)) != std::string::npos; start = nl + 1) {
      emit(r, s, s.partial.substr(start, nl + 1 - start));
    }
    s.partial.erase(0, start);
  }

  void emit(const Rank& r, const Stream& s, const std::string& line) {
    const std::string text = "[rank " + std::to_string(r.spawn->global_rank) + "] " + line;
    write_fully(s.terminal_fd, text.data(), text.size());
  }

  bool prefix_;
};

// Restores the launcher's signal mask and SIGPIPE disposition when supervision ends.
struct SignalRestore {
  sigset_t mask;
  struct sigaction pipe_action;
  ~SignalRestore() {
    sigaction(SIGPIPE, &pipe_action, nullptr);
    pthread_sigmask(SIG_SETMASK, &mask, nullptr);
  }
};

class Group {
 public:
  Group(const RankGroupSpec& spec, std::vector<Rank>& ranks)
      : spec_(spec), ranks_(ranks), pump_(spec.prefix) {}

  void signal_all(int sig) {
    for (auto& r : ranks_) {
      // The group of a rank that has ended may still hold its workers.
      if (r.pid > 0) kill(-r.pid, sig);
    }
  }

  // The first failure stops the others; later ones are expected consequences.
  void on_exit(Rank& r, int status) {
    r.running = false;
    r.code = decode_status(status);
    if (r.code == 0 || failure_) return;
    failure_ = r.code;
    end_.failed_rank = r.spawn->global_rank;
    end_.cause = describe_end(status);
    // Alone, the rank has no others to stop (what it started goes with its group, unannounced).
    const std::string others =
        ranks_.size() > 1
            ? fmt::format("; stopping the other ranks (SIGTERM, SIGKILL after {:g} s)",
                          spec_.grace_seconds)
            : "";
    spdlog::error("rank {} {}; its log: {}{}", r.spawn->global_rank, describe_end(status),
                  r.log_path, others);
    signal_all(SIGTERM);
    arm_kill();
  }

  void on_stop_signal(int sig) {
    end_.stop_requested = true;
    if (!kill_at_) {
      spdlog::warn(
          "{} received: forwarding it to every rank; killing them in {:g} s if they "
          "have not exited",
          strsignal(sig), spec_.grace_seconds);
    } else {
      spdlog::warn("{} received again: forwarding it to every rank", strsignal(sig));
    }
    signal_all(sig);
    arm_kill();
  }

  // Ranks found ended together: one that lost a peer (exit 75) is the echo of another's failure,
  // so the others are reported first and the cause is the one that is named.
  void reap() {
    std::vector<std::pair<Rank*, int>> ended;
    for (auto& r : ranks_) {
      if (!r.running) continue;
      int status = 0;
      const pid_t p = waitpid(r.pid, &status, WNOHANG);
      if (p == r.pid) ended.emplace_back(&r, status);
    }
    std::stable_partition(ended.begin(), ended.end(), [](const auto& e) {
      return decode_status(e.second) != exit_code::kRendezvous;
    });
    for (const auto& [r, status] : ended) on_exit(*r, status);
  }

  bool any_running() const {
    return std::any_of(ranks_.begin(), ranks_.end(), [](const Rank& r) { return r.running; });
  }

  int poll_timeout_ms() const {
    if (!kill_at_ || killed_) return -1;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(*kill_at_ - Clock::now());
    return static_cast<int>(std::max<long long>(0, left.count() + 1));
  }

  void kill_if_due() {
    if (!kill_at_ || killed_ || Clock::now() < *kill_at_) return;
    spdlog::error("ranks still running {:g} s after the stop signal: killing them",
                  spec_.grace_seconds);
    for (auto& r : ranks_) {
      if (r.running) kill(-r.pid, SIGKILL);
    }
    killed_ = true;
  }

  OutputPump& pump() { return pump_; }
  int result() const { return failure_.value_or(0); }
  const SupervisedEnd& end() const { return end_; }

 private:
  void arm_kill() {
    if (!kill_at_) {
      kill_at_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(spec_.grace_seconds));
    }
  }

  const RankGroupSpec& spec_;
  std::vector<Rank>& ranks_;
  OutputPump pump_;
  std::optional<Clock::time_point> kill_at_;
  bool killed_ = false;
  std::optional<int> failure_;
  SupervisedEnd end_;
};

void supervise_loop(Group& group, std::vector<Rank>& ranks, int sig_fd) {
  while (group.any_running()) {
    std::vector<pollfd> fds = {{sig_fd, POLLIN, 0}};
    std::vector<std::pair<Rank*, Stream*>> owners = {{nullptr, nullptr}};
    for (auto& r : ranks) {
      for (Stream& st : r.streams) {
        if (st.fd.fd >= 0) {
          fds.push_back({st.fd.fd, POLLIN, 0});
          owners.emplace_back(&r, &st);
        }
      }
    }
    const int n = poll(fds.data(), fds.size(), group.poll_timeout_ms());
    if (n < 0 && errno != EINTR) throw std::runtime_error("poll failed");
    if (n > 0 && (fds[0].revents & POLLIN)) {
      signalfd_siginfo info{};
      while (read(sig_fd, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
        const int sig = static_cast<int>(info.ssi_signo);
        if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) group.on_stop_signal(sig);
      }
    }
    for (std::size_t i = 1; n > 0 && i < fds.size(); ++i) {
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
        group.pump().read_from(*owners[i].first, *owners[i].second);
      }
    }
    group.reap();
    group.kill_if_due();
  }
  // What the ranks wrote before they ended; a worker of theirs still holding the pipe does not
  // keep the launcher waiting.
  for (auto& r : ranks) {
    for (Stream& st : r.streams) {
      if (st.fd.fd >= 0 && group.pump().read_from(r, st)) group.pump().finish(r, st);
    }
  }
}

}  // namespace

std::string rank_log_name(int global_rank) {
  return "rank-" + std::to_string(global_rank) + ".log";
}

int supervise_ranks(const RankGroupSpec& spec, SupervisedEnd* end) {
  std::vector<Rank> ranks(spec.ranks.size());
  std::optional<ActAs> owner;
  owner.emplace(spec.identity);
  const Fd dir(open(spec.log_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (dir.fd < 0) {
    throw UserError(exit_code::kCantWrite,
                    "cannot open " + spec.log_dir + " (" + std::strerror(errno) + ")");
  }
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    ranks[i].spawn = &spec.ranks[i];
    const std::string name = rank_log_name(spec.ranks[i].global_rank);
    ranks[i].log_path = spec.log_dir + "/" + name;
    ranks[i].log = open_log(dir.fd, name, ranks[i].log_path);
  }
  owner.reset();

  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&set, s);
  SignalRestore restore{};
  pthread_sigmask(SIG_BLOCK, &set, &restore.mask);
  // A terminal or pipe that went away must not kill the launcher while ranks run.
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &restore.pipe_action);
  const Fd sig_fd(signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC));
  if (sig_fd.fd < 0) throw std::runtime_error("signalfd failed");
  // A stop signal before the block went to the handler (stop_request.h), one after it waits in
  // the signalfd: none is lost, and a stop that came first starts no rank.
  if (stop_requested()) throw StopRequested(stop_signal(), "starting the ranks");

  Group group(spec, ranks);
  for (auto& r : ranks) {
    try {
      start_rank(spec, r, restore.mask);
    } catch (...) {
      group.signal_all(SIGKILL);
      for (auto& started : ranks) {
        if (started.running) waitpid(started.pid, nullptr, 0);
      }
      throw;
    }
  }
  supervise_loop(group, ranks, sig_fd.fd);
  // Signals that arrived after the ranks ended are consumed here rather than left pending for the
  // restored mask, where their default action would kill the launcher before it returns the code.
  signalfd_siginfo info{};
  while (read(sig_fd.fd, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
  }
  if (end != nullptr) *end = group.end();
  return group.result();
}

}  // namespace dl
