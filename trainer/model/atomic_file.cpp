// POSIX implementation of the atomic write: temporary file, fsync, rename, fsync of the directory.
#include "model/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

namespace dl::model {
namespace {

std::string errno_text() {
  return std::strerror(errno);
}

std::string directory_of(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
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
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) throw std::runtime_error("cannot create " + path_ + " (" + errno_text() + ")");
  }

  void write_all(const std::vector<char>& bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw std::runtime_error("cannot write " + path_ + " (" + errno_text() + ")");
      done += static_cast<size_t>(n);
    }
  }

  // The data must be on disk before the rename makes it visible under the final name.
  void sync_and_close() {
    if (::fsync(fd_) != 0) {
      throw std::runtime_error("cannot flush " + path_ + " (" + errno_text() + ")");
    }
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) {
      throw std::runtime_error("cannot close " + path_ + " (" + errno_text() + ")");
    }
  }

  void rename_to(const std::string& target) {
    if (::rename(path_.c_str(), target.c_str()) != 0) {
      throw std::runtime_error("cannot rename " + path_ + " (" + errno_text() + ")");
    }
    renamed_ = true;
  }

 private:
  std::string path_;
  int fd_ = -1;
  bool renamed_ = false;
};

}  // namespace

void write_file_atomically(const std::string& path, const std::vector<char>& bytes) {
  TempFile temp(path + ".tmp." + std::to_string(::getpid()));
  temp.open();
  temp.write_all(bytes);
  temp.sync_and_close();
  temp.rename_to(path);

  // Makes the rename itself durable. Best effort: the new file is already in place, and some
  // file systems refuse fsync on a directory.
  const int dir = ::open(directory_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
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

}  // namespace dl::model
