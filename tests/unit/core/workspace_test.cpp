// Workspace checks, run names and atomic writes.
#include "core/workspace.h"
#include "core/files.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/errors.h"
#include "support/temp_dir.h"

namespace dl::test {
namespace {

class WorkspaceTest : public ::testing::Test {
 protected:
  TempDir tmp_;
  const std::string dir_ = tmp_.path();
};

TEST_F(WorkspaceTest, ExistingDirectoryIsAccepted) {
  EXPECT_EQ(check_workspace(dir_, "--workspace"), dir_);
}

TEST_F(WorkspaceTest, MissingAndNonDirectoryAreRefusedWithTheirCodes) {
  try {
    check_workspace(dir_ + "/nope", "--workspace");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(e.code(), exit_code::kMissing);
    EXPECT_NE(std::string(e.what()).find("--workspace"), std::string::npos);
  }
  std::ofstream(dir_ + "/file") << "x";
  try {
    check_workspace(dir_ + "/file", "DL_WORKSPACE");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(e.code(), exit_code::kCantWrite);
    EXPECT_NE(std::string(e.what()).find("not a directory"), std::string::npos);
  }
}

TEST_F(WorkspaceTest, RunNamesAreTimestampsMadeUnique) {
  const std::time_t t = 1'800'000'000;
  const std::string first = choose_run_name(dir_, "", t);
  EXPECT_EQ(first.size(), 15u) << first;  // YYYYmmdd-HHMMSS
  create_run_dir(dir_, first);
  const std::string second = choose_run_name(dir_, "", t);
  EXPECT_EQ(second, first + "-2");
  EXPECT_EQ(choose_run_name(dir_, "mine", t), "mine");
}

TEST_F(WorkspaceTest, AtomicWriteReplacesWholeAndLeavesNoTemporary) {
  const std::string path = dir_ + "/plan.json";
  write_file_atomic(path, "first");
  write_file_atomic(path, "second");
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  EXPECT_EQ(s.str(), "second");
  int entries = 0;
  DIR* d = opendir(dir_.c_str());
  ASSERT_NE(d, nullptr);
  while (const dirent* e = readdir(d)) entries += e->d_name[0] != '.';
  closedir(d);
  EXPECT_EQ(entries, 1) << "a temporary file was left behind";
}

TEST_F(WorkspaceTest, AtomicWriteIntoAMissingDirectoryFails) {
  EXPECT_THROW(write_file_atomic(dir_ + "/no/such/dir/plan.json", "x"), UserError);
}

}  // namespace
}  // namespace dl::test
