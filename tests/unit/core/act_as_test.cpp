// ActAs (core/act_as.h): while it lives, root creates files as the workspace's owner would, and
// cannot create them where the owner could not; afterwards root is root again. Needs root, as the
// container's launcher is; skips otherwise.
#include "core/act_as.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "core/errors.h"
#include "support/temp_dir.h"

namespace dl::test {
namespace {

constexpr uid_t kNobody = 65534;

Identity nobody() {
  Identity who;
  who.uid = kNobody;
  who.gid = kNobody;
  return who;
}

class ActAsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (the container's launcher)";
    // The temporary directory's parent must be searchable by nobody.
    ASSERT_EQ(chmod(tmp_.path().c_str(), 0755), 0);
    ASSERT_EQ(mkdir(theirs_.c_str(), 0755), 0);
    ASSERT_EQ(chown(theirs_.c_str(), kNobody, kNobody), 0);
    ASSERT_EQ(mkdir(roots_.c_str(), 0755), 0);
  }
  TempDir tmp_;
  const std::string theirs_ = tmp_.path() + "/theirs";
  const std::string roots_ = tmp_.path() + "/roots";
};

uid_t owner_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(lstat(path.c_str(), &st), 0) << path;
  return st.st_uid;
}

TEST_F(ActAsTest, FilesMadeBelongToTheOwnerWithoutAChown) {
  {
    const ActAs as(nobody());
    ASSERT_EQ(mkdir((theirs_ + "/runs").c_str(), 0775), 0);
    ASSERT_EQ(close(creat((theirs_ + "/plan.json").c_str(), 0644)), 0);
  }
  EXPECT_EQ(owner_of(theirs_ + "/runs"), kNobody);
  EXPECT_EQ(owner_of(theirs_ + "/plan.json"), kNobody);
}

TEST_F(ActAsTest, WhereTheOwnerCannotWriteNeitherCanRoot) {
  {
    const ActAs as(nobody());
    errno = 0;
    EXPECT_NE(mkdir((roots_ + "/planted").c_str(), 0775), 0);
    EXPECT_EQ(errno, EACCES) << "a root-owned 0755 directory is closed to the owner";
    EXPECT_LT(open((roots_ + "/file").c_str(), O_WRONLY | O_CREAT, 0644), 0);
  }
  // Restored: root writes there again.
  EXPECT_EQ(mkdir((roots_ + "/after").c_str(), 0775), 0);
  EXPECT_EQ(owner_of(roots_ + "/after"), 0u);
}

TEST_F(ActAsTest, RootsGroupsAreDroppedToo) {
  // Group-writable by root's group (gid 0): root's supplementary groups must not open it.
  ASSERT_EQ(chmod(roots_.c_str(), 0775), 0);
  {
    const ActAs as(nobody());
    EXPECT_NE(mkdir((roots_ + "/via-group").c_str(), 0775), 0);
  }
  gid_t groups[64];
  const int n = getgroups(64, groups);
  ASSERT_GE(n, 0);
  for (int i = 0; i < n; ++i) EXPECT_NE(groups[i], kNobody) << "root's groups restored";
}

TEST_F(ActAsTest, NobodyToActAsChangesNothing) {
  const ActAs as(std::nullopt);
  EXPECT_EQ(mkdir((roots_ + "/mine").c_str(), 0775), 0);
  EXPECT_EQ(owner_of(roots_ + "/mine"), 0u);
}

}  // namespace
}  // namespace dl::test
