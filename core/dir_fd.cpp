// openat/mkdirat/renameat on a held directory (dir_fd.h).
#include "core/dir_fd.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "core/errors.h"
#include "core/fd_io.h"

namespace dl {
namespace {

[[noreturn]] void fail(const std::string& what, const std::string& path, int err) {
  throw UserError(exit_code::kCantWrite, what + " " + path + " (" + std::strerror(err) + ")");
}

// What is at `name` in `dir` when it is not the directory asked for, in the words of the refusal.
std::string not_a_directory(int dir, const std::string& name) {
  struct stat st {};
  if (fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return "not a directory";
  if (S_ISLNK(st.st_mode)) return "a symbolic link";
  return "not a directory";
}

}  // namespace

DirFd DirFd::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail("cannot open the directory", path, errno);
  return DirFd(fd, path);
}

DirFd::~DirFd() {
  if (fd_ >= 0) ::close(fd_);
}

DirFd::DirFd(DirFd&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)) {}

DirFd& DirFd::operator=(DirFd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
  }
  return *this;
}

DirFd DirFd::subdir(const std::string& name) const {
  const std::string path = path_ + "/" + name;
  if (::mkdirat(fd_, name.c_str(), 0775) != 0 && errno != EEXIST) {
    fail("cannot create", path, errno);
  }
  const int fd = ::openat(fd_, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ELOOP || err == ENOTDIR) {
      throw UserError(exit_code::kCantWrite, path + " is " + not_a_directory(fd_, name) +
                                                 "; expected a directory (links are not "
                                                 "followed in the workspace): remove it");
    }
    fail("cannot open", path, err);
  }
  return DirFd(fd, path);
}

void DirFd::write_file(const std::string& name, std::string_view bytes) const {
  const std::string path = path_ + "/" + name;
  struct stat st {};
  if (fstatat(fd_, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
    throw UserError(exit_code::kCantWrite, path + " is a directory; expected a file: remove it");
  }
  const std::string temp = name + ".tmp." + std::to_string(::getpid());
  const int fd =
      ::openat(fd_, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0664);
  if (fd < 0) fail("cannot create", path_ + "/" + temp, errno);
  int err = 0;
  const char* what = "cannot write";
  if (!write_fully(fd, bytes.data(), bytes.size())) err = errno;
  if (err == 0 && ::fsync(fd) != 0) {
    err = errno;
    what = "cannot flush";
  }
  if (::close(fd) != 0 && err == 0) {
    err = errno;
    what = "cannot close";
  }
  if (err == 0 && ::renameat(fd_, temp.c_str(), fd_, name.c_str()) != 0) {
    err = errno;
    what = "cannot rename into place";
  }
  if (err != 0) {
    ::unlinkat(fd_, temp.c_str(), 0);
    fail(what, path, err);
  }
  // The rename itself made durable; best effort, as some file systems refuse fsync on a directory.
  ::fsync(fd_);
}

}  // namespace dl
