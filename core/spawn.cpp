// fork and execve by hand rather than Boost.Process (1.71 in the image, 1.74 on Debian 12), which
// cannot carry this, as read in 1.74's headers (boost/process/detail/posix/):
//  - start_dir's on_exec_setup calls chdir and ignores its result: a folder the child cannot
//    enter is not an error, the program runs in the launcher's directory instead;
//  - limit_handles closes descriptors with opendir/readdir on /dev/fd in the child, which
//    allocate: not async-signal-safe after fork in a multithreaded parent;
//  - its error pipe is made with pipe() and then fcntl(FD_CLOEXEC), a window in which a fork on
//    another thread inherits it; a hook's set_error in the child does not stop it (it goes on
//    to exec unless the hook ends it); and there is no parent-death signal or CPU pinning.
// Here everything the child needs (argv, envp, groups, CPU set, /dev/null) is made before fork;
// after it the child makes only async-signal-safe calls, and reports a failed step through a
// close-on-exec pipe that the parent reads to its end (end of file: the exec succeeded).
#include "core/spawn.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <unordered_map>

extern char** environ;

namespace dl {
namespace {

// close_range's flag (Linux 5.11), spelled out for headers older than the kernel.
constexpr unsigned kCloseRangeCloexec = 1U << 2;

enum Step : int {
  kProcessGroup = 1,
  kStdio,
  kCpus,
  kGroups,
  kGid,
  kUid,
  kParentDeath,
  kDirectory,
  kDescriptors,
  kExec,
};

// What the child writes to the parent when a step fails.
struct Report {
  int step = 0;
  int error = 0;
};

// What the child needs, all of it made before fork.
struct Plan {
  char* const* argv;
  char* const* envp;
  const char* cwd;  // nullptr: stays
  bool switch_user;
  uid_t uid;
  gid_t gid;
  const gid_t* groups;
  std::size_t group_count;
  int stdio[3];     // source descriptors for 0, 1, 2; kInheritFd: left
  const int* keep;  // sorted, all above 2
  std::size_t keep_count;
  bool new_group;
  bool take_terminal;
  int death_signal;
  pid_t parent;
  const cpu_set_t* cpus;  // nullptr: not pinned
  const sigset_t* mask;   // nullptr: left
  int report_fd;
};

// Reports `step` with the current errno to the parent and ends the child.
[[noreturn]] void fail(const Plan& p, Step step) {
  const Report r{step, errno};
  while (write(p.report_fd, &r, sizeof r) < 0 && errno == EINTR) {
  }
  _exit(127);
}

bool kept(const Plan& p, int fd) {
  return std::binary_search(p.keep, p.keep + p.keep_count, fd);
}

// close_range(CLOSE_RANGE_CLOEXEC) over [first, last]; false where the kernel lacks it.
bool cloexec_range(unsigned first, unsigned last) {
#ifdef SYS_close_range
  return syscall(SYS_close_range, first, last, kCloseRangeCloexec) == 0;
#else
  (void)first;
  (void)last;
  errno = ENOSYS;
  return false;
#endif
}

// The same by listing /proc/self/fd with getdents64 into the stack (opendir would allocate).
bool cloexec_listed(const Plan& p) {
  const int dir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return false;
  alignas(dirent64) char buf[4096];
  while (true) {
    const long got = syscall(SYS_getdents64, dir, buf, sizeof buf);
    if (got < 0) {
      close(dir);
      return false;
    }
    if (got == 0) break;
    for (long off = 0; off < got;) {
      const auto* d = reinterpret_cast<const dirent64*>(buf + off);
      off += d->d_reclen;
      int fd = 0;
      const char* c = d->d_name;
      if (*c < '0' || *c > '9') continue;
      for (; *c >= '0' && *c <= '9'; ++c) fd = fd * 10 + (*c - '0');
      if (fd > 2 && fd != dir && !kept(p, fd)) fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
  }
  close(dir);
  return true;
}

// Every descriptor above 2 but the kept ones closes at exec (the report pipe among them).
bool cloexec_all_but_kept(const Plan& p) {
  bool ok = true;
  unsigned first = 3;
  for (std::size_t i = 0; i < p.keep_count && ok; ++i) {
    const auto k = static_cast<unsigned>(p.keep[i]);
    if (k > first) ok = cloexec_range(first, k - 1);
    first = k + 1;
  }
  if (ok) ok = cloexec_range(first, std::numeric_limits<unsigned>::max());
  if (!ok && !cloexec_listed(p)) return false;
  for (std::size_t i = 0; i < p.keep_count; ++i) {
    if (fcntl(p.keep[i], F_SETFD, 0) != 0) return false;
  }
  return true;
}

// In the child, between fork and exec: async-signal-safe calls only.
[[noreturn]] void run_child(const Plan& p) {
  if (p.new_group && setpgid(0, 0) != 0) fail(p, kProcessGroup);
  if (p.take_terminal) {
    // From the background tcsetpgrp would stop the child with SIGTTOU.
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    struct sigaction previous {};
    sigaction(SIGTTOU, &ignore, &previous);
    tcsetpgrp(STDIN_FILENO, getpgrp());
    sigaction(SIGTTOU, &previous, nullptr);
  }
  for (int target = 0; target < 3; ++target) {
    const int from = p.stdio[target];
    if (from == kInheritFd) continue;
    // dup2 onto itself would leave close-on-exec set.
    const bool ok = from == target ? fcntl(target, F_SETFD, 0) == 0 : dup2(from, target) == target;
    if (!ok) fail(p, kStdio);
  }
  if (p.cpus != nullptr && sched_setaffinity(0, sizeof(cpu_set_t), p.cpus) != 0) fail(p, kCpus);
  // Groups first, the uid last: once the uid is dropped, the rest is not allowed.
  if (p.switch_user) {
    if (setgroups(p.group_count, p.groups) != 0) fail(p, kGroups);
    if (setgid(p.gid) != 0) fail(p, kGid);
    if (setuid(p.uid) != 0) fail(p, kUid);
  }
  // After the uid: the kernel clears the parent-death signal when the credentials change. A
  // parent gone before it was set is seen in getppid.
  if (p.death_signal != 0) {
    if (prctl(PR_SET_PDEATHSIG, p.death_signal) != 0) fail(p, kParentDeath);
    if (getppid() != p.parent) _exit(127);
  }
  // With the user's rights: a folder they may not enter is refused here, not entered as root.
  if (p.cwd != nullptr && chdir(p.cwd) != 0) fail(p, kDirectory);
  if (!cloexec_all_but_kept(p)) fail(p, kDescriptors);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigaction(SIGPIPE, &dfl, nullptr);  // the launcher ignores it while it supervises
  if (p.mask != nullptr) sigprocmask(SIG_SETMASK, p.mask, nullptr);
  execve(p.argv[0], p.argv, p.envp);
  fail(p, kExec);
}

std::string step_text(const Report& r, const ChildSpec& spec) {
  switch (r.step) {
    case kProcessGroup:
      return "cannot make its process group";
    case kStdio:
      return "cannot set up its stdin, stdout and stderr";
    case kCpus:
      return "cannot pin it to its CPUs";
    case kGroups:
      return "cannot set its supplementary groups to gid " + std::to_string(spec.user->gid);
    case kGid:
      return "cannot switch to gid " + std::to_string(spec.user->gid);
    case kUid:
      return "cannot switch to uid " + std::to_string(spec.user->uid);
    case kParentDeath:
      return "cannot set its parent-death signal";
    case kDirectory:
      return "cannot enter " + spec.cwd;
    case kDescriptors:
      return "cannot close the launcher's descriptors";
    default:
      return "cannot execute " + spec.argv[0];
  }
}

std::vector<char*> pointers_to(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  pointers.reserve(strings.size() + 1);
  for (auto& s : strings) pointers.push_back(s.data());
  pointers.push_back(nullptr);
  return pointers;
}

[[noreturn]] void throw_errno(const std::string& what) {
  const int e = errno;
  throw SpawnError(what + ": " + std::strerror(e), e);
}

}  // namespace

std::vector<std::string> child_environment(
    const std::vector<std::pair<std::string, std::string>>& overrides, char** base) {
  if (base == nullptr) base = environ;
  constexpr std::size_t kDone = std::numeric_limits<std::size_t>::max();
  std::unordered_map<std::string, std::size_t> last;  // name -> its last value in overrides
  for (std::size_t i = 0; i < overrides.size(); ++i) last[overrides[i].first] = i;
  std::vector<std::string> out;
  for (char** e = base; *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq != nullptr && last.count(std::string(*e, static_cast<std::size_t>(eq - *e))) == 0)
      out.emplace_back(*e);
  }
  for (const auto& [name, value] : overrides) {
    std::size_t& at = last[name];
    if (at == kDone) continue;
    out.push_back(name + "=" + overrides[at].second);
    at = kDone;
  }
  return out;
}

pid_t spawn_child(const ChildSpec& spec) {
  if (spec.argv.empty()) throw SpawnError("nothing to execute (an empty command)", EINVAL);
  // Everything the child needs is made here: after fork, only async-signal-safe calls.
  std::vector<std::string> env_strings = child_environment(spec.env);
  const std::vector<char*> envp = pointers_to(env_strings);
  std::vector<std::string> argv_strings = spec.argv;
  const std::vector<char*> argv = pointers_to(argv_strings);
  std::vector<int> keep;
  for (int fd : spec.pass_fds) {
    if (fd > 2) keep.push_back(fd);
  }
  std::sort(keep.begin(), keep.end());
  keep.erase(std::unique(keep.begin(), keep.end()), keep.end());
  std::vector<gid_t> groups = spec.groups;
  if (spec.user && groups.empty()) groups.push_back(spec.user->gid);
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  for (int c : spec.cpus) {
    if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &cpus);
  }

  int null_fd = -1;
  const int stdio[3] = {spec.stdin_fd, spec.stdout_fd, spec.stderr_fd};
  if (std::find(stdio, stdio + 3, kNullFd) != stdio + 3) {
    null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null_fd < 0) throw_errno("cannot open /dev/null");
  }
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) {
    const int e = errno;
    if (null_fd >= 0) close(null_fd);
    errno = e;
    throw_errno("cannot make a pipe");
  }

  Plan plan{};
  plan.argv = argv.data();
  plan.envp = envp.data();
  plan.cwd = spec.cwd.empty() ? nullptr : spec.cwd.c_str();
  plan.switch_user = spec.user.has_value();
  plan.uid = spec.user ? spec.user->uid : 0;
  plan.gid = spec.user ? spec.user->gid : 0;
  plan.groups = groups.data();
  plan.group_count = groups.size();
  for (int i = 0; i < 3; ++i) plan.stdio[i] = stdio[i] == kNullFd ? null_fd : stdio[i];
  plan.keep = keep.data();
  plan.keep_count = keep.size();
  plan.new_group = spec.new_process_group;
  plan.take_terminal = spec.take_terminal;
  plan.death_signal = spec.parent_death_signal;
  plan.parent = getpid();
  plan.cpus = spec.cpus.empty() ? nullptr : &cpus;
  plan.mask = spec.mask;
  plan.report_fd = report[1];

  const pid_t pid = fork();
  if (pid == 0) run_child(plan);
  const int fork_errno = errno;
  close(report[1]);
  if (null_fd >= 0) close(null_fd);
  if (pid < 0) {
    close(report[0]);
    errno = fork_errno;
    throw_errno("cannot fork");
  }
  // Also here, so the group exists before the caller signals it (the child may not have run yet).
  if (spec.new_process_group) setpgid(pid, pid);
  Report r;
  ssize_t n;
  do {
    n = read(report[0], &r, sizeof r);
  } while (n < 0 && errno == EINTR);
  close(report[0]);
  if (n != static_cast<ssize_t>(sizeof r)) return pid;  // end of file: the exec succeeded
  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  throw SpawnError(step_text(r, spec) + ": " + std::strerror(r.error), r.error);
}

}  // namespace dl
