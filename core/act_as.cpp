// setfsuid/setfsgid and setgroups around a scope (act_as.h). setfsuid affects the calling thread
// only; setgroups (glibc) all threads, which is why the launcher does this while it has one.
#include "core/act_as.h"

#include <grp.h>
#include <sys/fsuid.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "core/errors.h"

namespace dl {
namespace {

[[noreturn]] void cannot(const std::string& what, uid_t uid) {
  throw UserError(exit_code::kCantWrite, "cannot " + what + " of " + describe_user(uid) +
                                             " to write into the workspace (" +
                                             std::strerror(errno) + ")");
}

// setfsuid/setfsgid report the previous id and never fail visibly: asking again with the same
// id returns the current one, which says whether the change took.
bool fs_ids_are(uid_t uid, gid_t gid) {
  return static_cast<uid_t>(setfsuid(uid)) == uid && static_cast<gid_t>(setfsgid(gid)) == gid;
}

}  // namespace

ActAs::ActAs(const std::optional<Identity>& who) {
  if (!who) return;
  const int count = getgroups(0, nullptr);
  if (count < 0) cannot("read the groups", who->uid);
  old_groups_.resize(static_cast<std::size_t>(count));
  if (getgroups(count, old_groups_.data()) != count) cannot("read the groups", who->uid);
  // The groups first: root's supplementary groups would otherwise still open group-writable files.
  if (setgroups(1, &who->gid) != 0) cannot("take the groups", who->uid);
  old_gid_ = static_cast<gid_t>(setfsgid(who->gid));
  old_uid_ = static_cast<uid_t>(setfsuid(who->uid));
  active_ = true;
  if (!fs_ids_are(who->uid, who->gid)) {
    restore();
    errno = EPERM;
    cannot("take the file-system identity", who->uid);
  }
}

ActAs::~ActAs() {
  restore();
}

void ActAs::restore() noexcept {
  if (!active_) return;
  active_ = false;
  setfsuid(old_uid_);
  setfsgid(old_gid_);
  setgroups(old_groups_.size(), old_groups_.data());
}

}  // namespace dl
