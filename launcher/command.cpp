// Command resolution, checked before anything is written so a typo costs nothing.
#include "launcher/command.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "core/errors.h"
#include "core/text.h"

namespace dl {
namespace {

bool is_file(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool is_executable(const std::string& path) {
  return is_file(path) && access(path.c_str(), X_OK) == 0;
}

std::string absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char cwd[PATH_MAX];
  if (getcwd(cwd, sizeof cwd) == nullptr) return path;
  return std::string(cwd) + "/" + path;
}

std::string search_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  for (const auto& dir : split(path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin", ':')) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (is_executable(candidate)) return absolute(candidate);
  }
  return {};
}

}  // namespace

std::vector<std::string> resolve_command(std::vector<std::string> argv) {
  if (argv.empty() || argv[0].empty()) {
    throw UserError(exit_code::kUsage, "nothing to run after '--'; expected a command");
  }
  const std::string& name = argv[0];
  if (name.find('/') != std::string::npos) {
    const std::string path = absolute(name);
    if (!is_file(path)) {
      throw UserError(exit_code::kNotFound, "command " + name + ": no such file");
    }
    if (!is_executable(path)) {
      throw UserError(
          exit_code::kNotExecutable,
          "command " + name + ": not executable (chmod +x, or run it through its interpreter)");
    }
    argv[0] = path;
    return argv;
  }
  const std::string found = search_path(name);
  if (found.empty()) {
    throw UserError(exit_code::kNotFound, "command '" + name + "' not found in PATH");
  }
  argv[0] = found;
  return argv;
}

std::vector<std::string> trainer_command(const std::string& trainer, const std::string& self_dir) {
  if (trainer.find('/') == std::string::npos) {
    for (const std::string& dir : {self_dir, self_dir + "/../trainer"}) {
      const std::string candidate = dir + "/" + trainer;
      if (is_executable(candidate)) {
        char resolved[PATH_MAX];
        return {realpath(candidate.c_str(), resolved) != nullptr ? resolved : candidate};
      }
    }
    if (search_path(trainer).empty()) {
      throw UserError(exit_code::kNotFound,
                      "trainer '" + trainer + "' not found beside dl-launch (" + self_dir +
                          ") or in PATH; build it, set --trainer, or give a command after '--'");
    }
  }
  return resolve_command({trainer});
}

std::string self_directory() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string path(buf, static_cast<size_t>(n));
  return path.substr(0, path.rfind('/'));
}

std::string companion_directory(const std::string& self_dir) {
  const std::string dir = self_dir + "/../python";
  if (!is_file(dir + "/dl_plan/__init__.py")) return {};
  char resolved[PATH_MAX];
  return realpath(dir.c_str(), resolved) != nullptr ? resolved : std::string{};
}

}  // namespace dl
