// Where dl-launch finds dl_plan for a program after "--": <its folder>/../python, only when that
// holds the module, as a realpath (the build tree reaches it through a link).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "launcher/command.h"
#include "support/files.h"
#include "support/temp_dir.h"

namespace dl::test {
namespace {

TEST(CompanionDirectory, IsTheRealPathOfTheSiblingPythonFolder) {
  TempDir root;
  ASSERT_EQ(mkdir((root / "bin").c_str(), 0755), 0);
  write_file(root / "python/dl_plan/__init__.py", "");
  EXPECT_EQ(companion_directory(root / "bin"), real_path(root / "python"));
}

TEST(CompanionDirectory, FollowsABuildTreesLinkToTheSources) {
  TempDir root;
  write_file(root / "src/python/dl_plan/__init__.py", "");
  ASSERT_EQ(mkdir((root / "build").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((root / "build/launcher").c_str(), 0755), 0);
  ASSERT_EQ(symlink((root / "src/python").c_str(), (root / "build/python").c_str()), 0);
  EXPECT_EQ(companion_directory(root / "build/launcher"), real_path(root / "src/python"));
}

TEST(CompanionDirectory, IsEmptyWithoutTheModule) {
  TempDir root;
  ASSERT_EQ(mkdir((root / "bin").c_str(), 0755), 0);
  EXPECT_EQ(companion_directory(root / "bin"), "");  // no python/ at all
  // A dl_plan folder that is not a package (no __init__.py) is not the companion.
  ASSERT_EQ(mkdir((root / "python").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((root / "python/dl_plan").c_str(), 0755), 0);
  EXPECT_EQ(companion_directory(root / "bin"), "");
  // Nor is one whose __init__.py is not a regular file.
  ASSERT_EQ(mkdir((root / "python/dl_plan/__init__.py").c_str(), 0755), 0);
  EXPECT_EQ(companion_directory(root / "bin"), "");
}

}  // namespace
}  // namespace dl::test
