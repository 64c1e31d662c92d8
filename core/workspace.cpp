// Workspace checks and run directories.
#include "core/workspace.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "core/errors.h"
#include "core/files.h"
#include "core/run_as.h"
#include "core/text.h"

namespace dl {
namespace {

bool exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

// plan.json, plan-rank-N.json, run.lock, train.log, rank-N.log.
bool start_file(const std::string& name) {
  if (name == "plan.json" || name == "run.lock" || name == "train.log") return true;
  const auto numbered = [&](const std::string& prefix, const std::string& suffix) {
    if (name.size() <= prefix.size() + suffix.size() || !starts_with(name, prefix) ||
        !ends_with(name, suffix)) {
      return false;
    }
    const std::string n = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    return parse_u64(n).has_value();
  };
  return numbered("plan-rank-", ".json") || numbered("rank-", ".log");
}

}  // namespace

std::string check_workspace(const std::string& path, const std::string& source) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    // Not created here: a mistyped path would quietly start an empty workspace.
    throw UserError(exit_code::kMissing, source + ": workspace " + path + " does not exist (" +
                                             std::strerror(errno) +
                                             "); create it with: dl-launch init " + path);
  }
  if (!S_ISDIR(st.st_mode)) {
    throw UserError(exit_code::kCantWrite,
                    source + ": workspace " + path + " is not a directory; expected a directory");
  }
  // access() honours read-only mounts for root too.
  if (access(path.c_str(), W_OK | X_OK) != 0) {
    const int err = errno;
    if (err == EROFS) {
      throw UserError(exit_code::kCantWrite,
                      source + ": workspace " + path +
                          " is on a read-only file system; runs/ and checkpoints are written "
                          "there: mount it read-write (docker: drop ':ro' from the volume)");
    }
    throw UserError(exit_code::kCantWrite,
                    source + ": workspace " + path + " is not writable by " +
                        describe_user(geteuid()) + " (" + std::strerror(err) + "; owned by " +
                        describe_user(st.st_uid) +
                        "); runs/ and checkpoints are written there: run as its owner (docker: "
                        "--user $(id -u):$(id -g)) or make it writable");
  }
  char resolved[PATH_MAX];
  if (realpath(path.c_str(), resolved) == nullptr) return path;
  return resolved;
}

std::string choose_run_name(const std::string& workspace, const std::string& requested,
                            std::time_t now) {
  if (!requested.empty()) return requested;
  std::tm tm{};
  localtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  std::string name = stamp;
  for (int n = 2; exists(workspace + "/runs/" + name); ++n) {
    name = std::string(stamp) + "-" + std::to_string(n);
  }
  return name;
}

std::vector<std::string> run_checkpoints(const std::string& run_dir) {
  std::vector<std::string> found;
  for (const char* name : {"last.pt", "best.pt"}) {
    struct stat st {};
    if (lstat((run_dir + "/" + name).c_str(), &st) == 0) found.emplace_back(name);
  }
  return found;
}

void refuse_overwrite(const std::string& run_dir) {
  const std::vector<std::string> saved = run_checkpoints(run_dir);
  if (saved.empty()) return;
  std::string names;
  for (const auto& n : saved) names += (names.empty() ? "" : ", ") + n;
  // best.pt is written before last.pt: best.pt alone is a run stopped between the two writes of
  // its first epoch, which has nothing --resume could continue from.
  const bool resumable = saved.front() == "last.pt";
  throw UserError(exit_code::kRunExists,
                  "run directory " + run_dir + " already holds checkpoints (" + names +
                      ") of an earlier run; " +
                      (resumable ? "continue it with --resume, or start another with a new --name "
                                   "(--overwrite replaces them)"
                                 : "it has no last.pt to continue from: start it over with "
                                   "--overwrite (replaces best.pt), or start another with a new "
                                   "--name"));
}

bool remove_refused_run_dir(int parent_fd, const std::string& name) {
  const int runs = parent_fd;
  bool removed = false;
  const int dir = ::openat(runs, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir >= 0) {
    DIR* listing = ::fdopendir(dir);
    std::vector<std::string> entries;
    bool keep = listing == nullptr;
    while (listing != nullptr) {
      const dirent* e = ::readdir(listing);
      if (e == nullptr) break;
      const std::string n = e->d_name;
      if (n == "." || n == "..") continue;
      // Only what a start writes before its program has done anything: the plan, the lock, the
      // logs. Anything else (a checkpoint, a file the program saved) keeps the directory whole.
      if (!start_file(n)) keep = true;
      entries.push_back(n);
    }
    if (!keep) {
      // unlinkat removes a link itself, never what it points to; a directory stays (and so does
      // the run directory, then).
      for (const auto& n : entries) ::unlinkat(::dirfd(listing), n.c_str(), 0);
      removed = ::unlinkat(runs, name.c_str(), AT_REMOVEDIR) == 0;
    }
    if (listing != nullptr) {
      ::closedir(listing);
    } else {
      ::close(dir);
    }
  }
  return removed;
}

std::string create_run_dir(const std::string& workspace, const std::string& name) {
  make_dir(workspace + "/runs");
  const std::string dir = workspace + "/runs/" + name;
  make_dir(dir);
  return dir;
}

}  // namespace dl
