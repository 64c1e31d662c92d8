// Whose files the run makes. In the container dl-launch runs as root, but the workspace is the
// host user's bind mount: what root writes there (runs/, checkpoints, the batch-size cache) would
// belong to root on the host, and the user could not delete it. So when dl-launch is root and
// the workspace belongs to another uid, the program runs as that uid and gid (set in the child
// between fork and exec), and dl-launch writes into the workspace with their credentials
// (act_as.h).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

namespace dl {

class DirFd;

struct Identity {
  uid_t uid = 0;
  gid_t gid = 0;
  std::string name;  // from the passwd database; "" when the uid has no entry (a host uid)
  std::string home;  // HOME for the program (home_for); "" until decided
};

// "alice (uid 1000)", or "uid 1000" when the uid has no name here.
std::string describe_user(uid_t uid);

// The owner of the workspace when `enabled`, this process is root, and the owner is not root;
// nullopt otherwise. Reads only: safe for a dry run. `enabled` is the run-as-owner setting.
std::optional<Identity> workspace_owner(const std::string& workspace, bool enabled);

// A HOME the program can write to (caches of pip, torch.hub, matplotlib): the user's own home
// when the passwd database has one that belongs to them, else <workspace>/.dl/home, created
// (call it with the owner's credentials, ActAs, so it is theirs; a link on the way is refused).
// Root's HOME (/root, mode 700) is not theirs to use.
std::string home_for(const Identity& who, const DirFd& workspace);

}  // namespace dl
