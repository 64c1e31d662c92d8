// Starting a child process: the one way every spawner of the launcher (the supervised program,
// the ranks, the probes) starts one. The environment is merged one way; the child takes its
// groups and user before it enters its working directory, so a folder its user may not enter is
// refused; it keeps no descriptor of the launcher's but 0, 1, 2 and those passed on purpose; and
// a step that fails in the child (the directory, the user, the exec) is reported to the parent,
// which throws one line naming it, before anything of the program has run.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/run_as.h"

namespace dl {

// The child's stdin, stdout or stderr: a descriptor of the launcher's (copied to 0, 1 or 2), or:
inline constexpr int kInheritFd = -1;  // the launcher's own 0, 1 or 2
inline constexpr int kNullFd = -2;     // /dev/null

struct ChildSpec {
  std::vector<std::string> argv;  // argv[0] a path; PATH is not searched
  // On top of the launcher's environment (child_environment).
  std::vector<std::pair<std::string, std::string>> env;
  std::string cwd;  // entered after the switch to `user`, with their rights; "": the launcher's
  // Runs the child as this uid and gid, with `groups` as its supplementary groups (empty: its
  // gid alone).
  std::optional<Identity> user;
  std::vector<gid_t> groups;
  int stdin_fd = kInheritFd;
  int stdout_fd = kInheritFd;
  int stderr_fd = kInheritFd;
  // Descriptors (above 2) the child keeps at their numbers; every other one is closed at exec.
  std::vector<int> pass_fds;
  bool new_process_group = true;  // the child leads a group of its own, which can be signalled
  bool take_terminal = false;     // its group becomes the foreground group of the terminal on 0
  // Sent to the child when the launcher's thread that started it ends (kill -9 of the launcher
  // included); 0: none.
  int parent_death_signal = 0;
  std::vector<int> cpus;           // pinned to these CPUs; empty: not pinned
  const sigset_t* mask = nullptr;  // the child's signal mask; nullptr: the caller's
};

// A step in the child that failed; what() is one line such as "cannot enter /ws: Permission
// denied" or "cannot execute /ws/train: No such file or directory".
class SpawnError : public std::runtime_error {
 public:
  SpawnError(const std::string& what, int error) : std::runtime_error(what), error_(error) {}
  int error() const { return error_; }  // the errno

 private:
  int error_;
};

// The launcher's environment (`base`, environ when null) with `overrides` on top, as execve
// takes it: the launcher's NAME=value entries in their order without the names overridden, then
// each overridden name once, where it first appears in `overrides`, with its last value there.
std::vector<std::string> child_environment(
    const std::vector<std::pair<std::string, std::string>>& overrides, char** base = nullptr);

// Starts the child and returns its pid once the exec has succeeded. In the child, in this order:
// its process group (and the terminal), its stdin, stdout and stderr, its CPUs, the supplementary
// groups, the gid, the uid, the parent-death signal (after the uid: the kernel clears it when
// the credentials change), the working directory, close-on-exec for every descriptor but 0, 1, 2
// and `pass_fds`, SIGPIPE back to its default, the signal mask, exec. Throws SpawnError when a
// step failed there (the child has been reaped), or when the pipe or fork failed.
pid_t spawn_child(const ChildSpec& spec);

}  // namespace dl
