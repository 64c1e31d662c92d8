// A bounded walk of the workspace with openat/fstatat relative to descriptors (no link below the
// workspace is followed), and a substring search in each .py file's first megabyte.
#include "launcher/program_kind.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "core/text.h"

namespace dl {
namespace {

constexpr const char* kModule = "dl_plan";

}  // namespace

bool is_python_program(const std::vector<std::string>& command) {
  if (command.empty()) return false;
  const std::string exe = base_name(command[0]);
  if (starts_with(exe, "python") || ends_with(exe, ".py")) return true;
  // `env python3 ...`, `uv run ...` and friends: a .py argument says Python.
  for (std::size_t i = 1; i < command.size(); ++i) {
    if (ends_with(command[i], ".py")) return true;
  }
  return false;
}

namespace {

// Whether the open file names the module in its first kMaxScannedFileBytes.
bool names_module(int fd) {
  std::string text;
  char buf[65536];
  while (static_cast<long>(text.size()) < kMaxScannedFileBytes) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  return text.find(kModule) != std::string::npos;
}

bool file_names_module(int dir_fd, const char* name) {
  const int fd = ::openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return false;
  struct stat st {};
  const bool found = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && names_module(fd);
  ::close(fd);
  return found;
}

// Depth-first over `dir_fd` (which it closes); true at the first .py file naming the module.
bool tree_names_module(int dir_fd, int depth, int* files) {
  DIR* dir = ::fdopendir(dir_fd);
  if (dir == nullptr) {
    ::close(dir_fd);
    return false;
  }
  bool found = false;
  while (!found && *files < kMaxScannedFiles) {
    const dirent* e = ::readdir(dir);
    if (e == nullptr) break;
    const std::string name = e->d_name;
    if (name.empty() || name[0] == '.' || name == "__pycache__") continue;
    struct stat st {};
    if (::fstatat(::dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      // runs/ and data/ hold outputs and data sets, not the program.
      if (depth == 0 && (name == "runs" || name == "data")) continue;
      if (depth >= 8) continue;
      const int sub =
          ::openat(::dirfd(dir), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub >= 0) found = tree_names_module(sub, depth + 1, files);
    } else if (S_ISREG(st.st_mode) && ends_with(name, ".py")) {
      ++*files;
      found = file_names_module(::dirfd(dir), e->d_name);
    }
  }
  ::closedir(dir);
  return found;
}

}  // namespace

std::optional<std::string> cannot_speak_protocol(const std::vector<std::string>& command,
                                                 const std::string& workspace) {
  if (!is_python_program(command)) {
    return "it is not a Python program; the protocol's module, dl_plan, is Python";
  }
  for (std::size_t i = 1; i < command.size(); ++i) {
    if (command[i] == "-m" || command[i] == "-c") return std::nullopt;  // cannot look inside
    if (!ends_with(command[i], ".py")) continue;
    const std::string path = command[i][0] == '/' ? command[i] : workspace + "/" + command[i];
    if (file_names_module(AT_FDCWD, path.c_str())) return std::nullopt;
  }
  int files = 0;
  const int root = ::open(workspace.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (root >= 0 && tree_names_module(root, 0, &files)) return std::nullopt;
  return "no Python file of the command or of the workspace imports dl_plan";
}

}  // namespace dl
