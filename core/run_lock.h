// One live run per run directory. Two runs started with the same --name in one workspace would
// write one directory, overwriting each other's checkpoints and metrics; the second is refused
// instead, naming the first's PID. The lock is an exclusive flock on <run dir>/run.lock, so the
// kernel releases it when the last process holding it ends, kill -9 included: a crashed run never
// blocks the next. dl-launch takes it before it writes into the run directory and hands the
// descriptor to the program (DL_RUN_LOCK_FD); dl-train started on its own takes it itself.
#pragma once

#include <optional>
#include <string>

namespace dl {

class DirFd;

class RunLock {
 public:
  static constexpr const char* kFileName = "run.lock";
  static constexpr const char* kFdVariable = "DL_RUN_LOCK_FD";

  // Takes the lock in `run_dir` and writes this process's PID into the file. Throws UserError 74
  // "run directory <dir> is in use by PID <n> ..." when another process holds it, 73 when the
  // file cannot be opened (a link or anything but a plain file there is refused).
  static RunLock take(const DirFd& run_dir);

  // The lock a parent took for this process: `fd` from DL_RUN_LOCK_FD, when it is open on
  // `run_dir`'s run.lock (the same file) and this process now holds it. nullopt when `fd` is
  // anything else, so the caller takes the lock itself.
  static std::optional<RunLock> adopt(int fd, const DirFd& run_dir);

  RunLock(RunLock&& other) noexcept;
  RunLock& operator=(RunLock&& other) noexcept;
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;
  ~RunLock();

  // Leaves the descriptor open across exec, so the started program holds the lock with this
  // process (a launcher killed with -9 leaves its running program still protected). Returns it.
  int share_with_children() const;
  int fd() const { return fd_; }

 private:
  explicit RunLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace dl
