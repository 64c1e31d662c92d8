// Directories of a workspace held open, and what is made inside them named relative to the
// descriptor: a path is resolved once, when the directory is opened, so a link swapped in later
// changes nothing, and a link where one of our directories is expected is refused by name
// (O_NOFOLLOW) instead of followed. Used with ActAs (act_as.h): the descriptor decides where, the
// owner's credentials decide whether.
#pragma once

#include <string>
#include <string_view>

namespace dl {

class DirFd {
 public:
  // Opens the directory `path` (following links: it is the path the user gave). Throws UserError
  // 73 naming it.
  static DirFd open(const std::string& path);

  DirFd() = default;
  ~DirFd();
  DirFd(DirFd&& other) noexcept;
  DirFd& operator=(DirFd&& other) noexcept;
  DirFd(const DirFd&) = delete;
  DirFd& operator=(const DirFd&) = delete;

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }

  // The directory `name` inside this one, created (mode 0775) when absent. Throws UserError 73
  // when it cannot be made or opened, and when `name` is a symbolic link or not a directory
  // ("<path>/<name> is a symbolic link; expected a directory: remove it").
  DirFd subdir(const std::string& name) const;

  // Writes `name` atomically: "<name>.tmp.<pid>" made with O_EXCL|O_NOFOLLOW, fsynced, renamed
  // over `name`, and the directory fsynced. Whatever `name` was (a link, a FIFO, a hard link to
  // another file) is replaced, never written through; a directory there is refused. Throws
  // UserError 73 naming the file.
  void write_file(const std::string& name, std::string_view bytes) const;

 private:
  DirFd(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::string path_;
};

}  // namespace dl
