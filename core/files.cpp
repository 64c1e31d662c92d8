// POSIX implementation of the directory helpers and the atomic write (temporary file, fsync,
// rename, fsync of the directory).
#include "core/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "core/errors.h"

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

  void open() {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0664);
    if (fd_ < 0) fail("cannot create", path_);
  }

  void write_all(std::string_view bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) fail("cannot write", path_);
      done += static_cast<size_t>(n);
    }
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
  std::string path_;
  int fd_ = -1;
  bool renamed_ = false;
};

}  // namespace

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

std::vector<char> read_whole_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(errno_text());
  std::vector<char> bytes;
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
