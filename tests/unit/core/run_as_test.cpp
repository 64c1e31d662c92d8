// Whose identity the program takes (launcher/run_as.h): only root switches, only to a workspace
// owner that is not root, only when enabled; HOME is one that user can write to.
#include "core/run_as.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "core/act_as.h"
#include "core/dir_fd.h"
#include "support/temp_dir.h"

namespace dl::test {
namespace {

constexpr uid_t kNobody = 65534;

class RunAs : public ::testing::Test {
 protected:
  TempDir tmp_;
  const std::string dir_ = tmp_.path();
};

TEST_F(RunAs, NamesUsersByNameAndUid) {
  EXPECT_EQ(describe_user(0), "root (uid 0)");
  EXPECT_EQ(describe_user(4000123), "uid 4000123");  // a host uid the container does not know
}

TEST_F(RunAs, OwnWorkspaceOrDisabledMeansNoSwitch) {
  // A directory this process made is its own: nothing to switch to, root or not.
  EXPECT_FALSE(workspace_owner(dir_, true));
  if (geteuid() != 0) GTEST_SKIP() << "the rest needs root";
  ASSERT_EQ(chown(dir_.c_str(), kNobody, kNobody), 0);
  EXPECT_FALSE(workspace_owner(dir_, false)) << "run-as-owner false";
}

TEST_F(RunAs, AsRootAnotherUsersWorkspaceGivesTheirIdentityAndAHomeTheyOwn) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (the container's case)";
  ASSERT_EQ(chown(dir_.c_str(), kNobody, kNobody), 0);
  const auto who = workspace_owner(dir_, true);
  ASSERT_TRUE(who);
  EXPECT_EQ(who->uid, kNobody);
  EXPECT_EQ(who->gid, kNobody);
  // nobody's passwd home (/nonexistent) is not theirs: the workspace keeps one for them, made
  // with their credentials.
  std::string home;
  {
    const ActAs owner(who);
    home = home_for(*who, DirFd::open(dir_));
  }
  EXPECT_EQ(home, dir_ + "/.dl/home");
  struct stat st {};
  ASSERT_EQ(stat(home.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, kNobody);
  ASSERT_EQ(stat((dir_ + "/.dl").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, kNobody);
}

}  // namespace
}  // namespace dl::test
