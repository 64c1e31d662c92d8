// POSIX implementation of the directory helpers and the atomic write (temporary file, fsync,
// rename, fsync of the directory), and the removal of temporaries that dead writers left.
#include "core/files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <utility>

#include "core/errors.h"
#include "core/fd_io.h"
#include "core/text.h"

namespace dl {
namespace {

std::string errno_text() {
  return std::strerror(errno);
}

[[noreturn]] void fail(const std::string& what, const std::string& path) {
  throw UserError(exit_code::kCantWrite, what + " " + path + " (" + errno_text() + ")");
}

// Closes the descriptor and removes the temporary file unless the rename went through.
class TempFile {
 public:
  explicit TempFile(std::string path) : path_(std::move(path)) {}
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!renamed_) ::unlink(path_.c_str());
  }

  // Created and locked: the lock (held until close, also released when the process dies) is
  // what tells remove_stale_temporaries that this file is in use. A remover that locked the
  // file between our open and our flock has unlinked the name by the time we get the lock:
  // then the file is created again. Never opened through a link.
  void open() {
    for (int attempt = 0; attempt < 8; ++attempt) {
      fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0664);
      if (fd_ < 0) fail("cannot create", path_);
      if (lock_and_check_name()) return;
      ::close(fd_);
      fd_ = -1;
    }
    errno = EAGAIN;
    fail("cannot create", path_);
  }

  void write_all(std::string_view bytes) {
    if (!write_fully(fd_, bytes.data(), bytes.size())) fail("cannot write", path_);
  }

  // The data must be on disk before the rename makes it visible under the final name.
  void sync_and_close() {
    if (::fsync(fd_) != 0) fail("cannot flush", path_);
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) fail("cannot close", path_);
  }

  void rename_to(const std::string& target) {
    if (::rename(path_.c_str(), target.c_str()) != 0) fail("cannot rename", path_);
    renamed_ = true;
  }

 private:
  // False when the name no longer leads to the file we opened. Where the file system has no
  // flock the file stays unlocked, and removers, unable to lock it either, leave it alone.
  bool lock_and_check_name() {
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR) return true;
    }
    struct stat opened {};
    struct stat named {};
    return ::fstat(fd_, &opened) == 0 && ::lstat(path_.c_str(), &named) == 0 &&
           opened.st_dev == named.st_dev && opened.st_ino == named.st_ino;
  }

  std::string path_;
  int fd_ = -1;
  bool renamed_ = false;
};

// "<base>.tmp.<digits>": the names write_file_atomic gives its temporaries.
bool is_temporary_of(const std::string& name, const std::string& base) {
  const std::string prefix = base + ".tmp.";
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return false;
  return std::all_of(name.begin() + static_cast<std::ptrdiff_t>(prefix.size()), name.end(),
                     [](unsigned char c) { return std::isdigit(c) != 0; });
}

bool same_file(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// Removes `name` in the directory `dir` when it is a regular file nobody holds locked. The
// checks go through a descriptor opened without following links, and the name is unlinked
// only while it still leads to the file that was locked.
bool remove_if_stale(int dir, const std::string& name) {
  struct stat before {};
  if (::fstatat(dir, name.c_str(), &before, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(before.st_mode)) {
    return false;
  }
  const int fd = ::openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  bool removed = false;
  struct stat opened {};
  struct stat now {};
  if (::fstat(fd, &opened) == 0 && S_ISREG(opened.st_mode) && same_file(before, opened) &&
      ::flock(fd, LOCK_EX | LOCK_NB) == 0 &&
      ::fstatat(dir, name.c_str(), &now, AT_SYMLINK_NOFOLLOW) == 0 && same_file(now, opened)) {
    removed = ::unlinkat(dir, name.c_str(), 0) == 0;
  }
  ::close(fd);  // releases the lock
  return removed;
}

}  // namespace

std::vector<std::string> remove_stale_temporaries(const std::string& path) {
  std::vector<std::string> removed;
  const std::string base = base_name(path);
  DIR* listing = ::opendir(parent_directory(path).c_str());
  if (listing == nullptr) return removed;
  std::vector<std::string> candidates;
  while (const dirent* entry = ::readdir(listing)) {
    if (is_temporary_of(entry->d_name, base)) candidates.emplace_back(entry->d_name);
  }
  for (const std::string& name : candidates) {
    if (remove_if_stale(::dirfd(listing), name)) removed.push_back(name);
  }
  ::closedir(listing);
  std::sort(removed.begin(), removed.end());
  return removed;
}

std::string current_directory() {
  std::vector<char> buf(4096);
  while (::getcwd(buf.data(), buf.size()) == nullptr) {
    if (errno != ERANGE || buf.size() > (1u << 20)) return ".";
    buf.resize(buf.size() * 2);
  }
  return buf.data();
}

std::string absolute_path(const std::string& path, const std::string& base) {
  if (path.empty() || path.front() == '/') return path;
  // A URL (s3://bucket/x, https://host/x, file:///x) is not a path relative to anything.
  const std::size_t scheme = path.find("://");
  if (scheme != std::string::npos && scheme > 0 &&
      path.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-") ==
          scheme) {
    return path;
  }
  std::string joined = std::filesystem::path(base + "/" + path).lexically_normal().string();
  while (joined.size() > 1 && joined.back() == '/') joined.pop_back();
  return joined;
}

std::string parent_directory(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

void make_dir(const std::string& path) {
  if (::mkdir(path.c_str(), 0775) != 0 && errno != EEXIST) {
    throw UserError(exit_code::kCantWrite, "cannot create " + path + ": " + errno_text());
  }
}

void make_dirs(const std::string& path) {
  for (std::size_t i = 1; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') make_dir(path.substr(0, i));
  }
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
  remove_stale_temporaries(path);
  TempFile temp(path + ".tmp." + std::to_string(::getpid()));
  temp.open();
  temp.write_all(bytes);
  temp.sync_and_close();
  temp.rename_to(path);

  // Makes the rename itself durable. Best effort: the new file is already in place, and some
  // file systems refuse fsync on a directory.
  const int dir = ::open(parent_directory(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

std::string not_regular_file(mode_t mode) {
  const char* kind = S_ISDIR(mode)    ? "a directory"
                     : S_ISFIFO(mode) ? "a FIFO"
                     : S_ISSOCK(mode) ? "a socket"
                     : S_ISCHR(mode)  ? "a character device"
                     : S_ISBLK(mode)  ? "a block device"
                                      : "not a plain file";
  return std::string("is ") + kind + ", not a regular file";
}

std::vector<char> read_whole_file(const std::string& path) {
  // O_NONBLOCK: opening a FIFO planted under the name must not wait for a writer; a regular file
  // ignores the flag.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw std::runtime_error(errno_text());
  struct stat st {};
  const bool stated = ::fstat(fd, &st) == 0;
  if (!stated || !S_ISREG(st.st_mode)) {
    const std::string error = stated ? not_regular_file(st.st_mode) : errno_text();
    ::close(fd);
    throw std::runtime_error(error);
  }
  std::vector<char> bytes;
  bytes.reserve(static_cast<std::size_t>(st.st_size));
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string error = errno_text();
      ::close(fd);
      throw std::runtime_error(error);
    }
    if (n == 0) break;
    bytes.insert(bytes.end(), buffer, buffer + n);
  }
  ::close(fd);
  return bytes;
}

}  // namespace dl
