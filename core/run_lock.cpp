// flock on run.lock, opened relative to the run directory's descriptor (run_lock.h).
#include "core/run_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "core/dir_fd.h"
#include "core/errors.h"
#include "core/text.h"

namespace dl {
namespace {

// The PID the holder wrote, or "" when it has not yet (it writes right after taking the lock).
std::string holder(int fd) {
  char buffer[32] = {};
  const ssize_t n = pread(fd, buffer, sizeof buffer - 1, 0);
  if (n <= 0) return {};
  std::string text(buffer, static_cast<std::size_t>(n));
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return parse_i64(text) ? text : std::string{};
}

bool same_file(int fd, int dir_fd, const char* name) {
  struct stat a {
  }, b{};
  return fstat(fd, &a) == 0 && fstatat(dir_fd, name, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
         a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

}  // namespace

RunLock RunLock::take(const DirFd& run_dir) {
  const std::string path = run_dir.path() + "/" + kFileName;
  // O_NONBLOCK: a FIFO planted under the name must not hang the open.
  const int fd =
      openat(run_dir.fd(), kFileName, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0664);
  if (fd < 0) {
    const int err = errno;
    throw UserError(exit_code::kCantWrite,
                    "cannot open " + path + " (" + std::strerror(err) + ")" +
                        (err == ELOOP ? "; a symbolic link there is not followed: remove it" : ""));
  }
  RunLock lock(fd);
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    throw UserError(exit_code::kCantWrite,
                    path + " is not a plain file; expected the run's lock file: remove it");
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK) {
      throw UserError(exit_code::kCantWrite,
                      "cannot lock " + path + " (" + std::strerror(errno) + ")");
    }
    const std::string pid = holder(fd);
    throw UserError(exit_code::kInUse,
                    "run directory " + run_dir.path() + " is in use by " +
                        (pid.empty() ? std::string("another process") : "PID " + pid) + " (" +
                        path + " is locked); wait for that run to end or choose another --name");
  }
  const std::string pid = std::to_string(getpid()) + "\n";
  if (ftruncate(fd, 0) != 0 || pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    throw UserError(exit_code::kCantWrite,
                    "cannot write " + path + " (" + std::strerror(errno) + ")");
  }
  return lock;
}

std::optional<RunLock> RunLock::adopt(int fd, const DirFd& run_dir) {
  if (fd < 0 || !same_file(fd, run_dir.fd(), kFileName)) return std::nullopt;
  // On the inherited open file description the lock is already ours: this succeeds at once.
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) return std::nullopt;
  fcntl(fd, F_SETFD, FD_CLOEXEC);
  return RunLock(fd);
}

RunLock::RunLock(RunLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

RunLock& RunLock::operator=(RunLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

RunLock::~RunLock() {
  if (fd_ >= 0) close(fd_);
}

int RunLock::share_with_children() const {
  fcntl(fd_, F_SETFD, 0);
  return fd_;
}

}  // namespace dl
