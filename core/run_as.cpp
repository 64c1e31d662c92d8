// Owners, chown and HOME for running the program as the workspace's owner.
#include "core/run_as.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "core/dir_fd.h"
#include "core/errors.h"

namespace dl {
namespace {

std::optional<passwd> passwd_of(uid_t uid, std::vector<char>* buffer) {
  passwd entry{};
  passwd* found = nullptr;
  buffer->resize(16384);
  if (getpwuid_r(uid, &entry, buffer->data(), buffer->size(), &found) != 0 || found == nullptr) {
    return std::nullopt;
  }
  return entry;
}

}  // namespace

std::string describe_user(uid_t uid) {
  std::vector<char> buffer;
  const auto entry = passwd_of(uid, &buffer);
  const std::string id = "uid " + std::to_string(uid);
  return entry ? std::string(entry->pw_name) + " (" + id + ")" : id;
}

std::optional<Identity> workspace_owner(const std::string& workspace, bool enabled) {
  if (!enabled || geteuid() != 0) return std::nullopt;
  struct stat st {};
  if (stat(workspace.c_str(), &st) != 0 || st.st_uid == 0) return std::nullopt;
  Identity who;
  who.uid = st.st_uid;
  who.gid = st.st_gid;
  std::vector<char> buffer;
  if (const auto entry = passwd_of(st.st_uid, &buffer)) who.name = entry->pw_name;
  return who;
}

std::string home_for(const Identity& who, const DirFd& workspace) {
  std::vector<char> buffer;
  if (const auto entry = passwd_of(who.uid, &buffer)) {
    struct stat st {};
    if (entry->pw_dir != nullptr && stat(entry->pw_dir, &st) == 0 && S_ISDIR(st.st_mode) &&
        st.st_uid == who.uid) {
      return entry->pw_dir;
    }
  }
  return workspace.subdir(".dl").subdir("home").path();
}

}  // namespace dl
