// Writes into a workspace with its owner's credentials. dl-launch runs as root in the image, on a
// directory another user mounted: whatever links that user planted there, a file root creates
// through them lands where the user could never write. So while an ActAs is alive, the calling
// thread's file-system identity (fsuid, fsgid, and the supplementary groups of the process) is
// the owner's: the kernel checks every open, mkdir and rename as it would for the owner, and root's
// file capabilities (CAP_DAC_OVERRIDE, CAP_CHOWN, ...) are off. Files made meanwhile belong to the
// owner without a chown. The process keeps its real and effective uid 0, so the identity can be
// restored, and the launcher can still start the program and signal it.
#pragma once

#include <sys/types.h>

#include <optional>
#include <vector>

#include "core/run_as.h"

namespace dl {

class ActAs {
 public:
  // Nothing changes when `who` is nullopt (not root, or the workspace is root's own). Throws
  // UserError 73 when the identity cannot be taken.
  explicit ActAs(const std::optional<Identity>& who);
  ~ActAs();
  ActAs(const ActAs&) = delete;
  ActAs& operator=(const ActAs&) = delete;

 private:
  void restore() noexcept;
  bool active_ = false;
  uid_t old_uid_ = 0;
  gid_t old_gid_ = 0;
  std::vector<gid_t> old_groups_;
};

}  // namespace dl
