// DirFd (core/dir_fd.h): our directories are made or opened without following a link, a link
// where one is expected is refused by name, and a file is replaced by rename, never written
// through whatever stood at its name (a link, a FIFO, a hard link to someone else's file).
#include "core/dir_fd.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/errors.h"
#include "support/temp_dir.h"

namespace dl::test {
namespace {

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class DirFdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(mkdir(ws_.c_str(), 0755), 0);
    ASSERT_EQ(mkdir(elsewhere_.c_str(), 0755), 0);
  }
  TempDir tmp_;
  const std::string ws_ = tmp_.path() + "/ws";
  const std::string elsewhere_ = tmp_.path() + "/elsewhere";
};

TEST_F(DirFdTest, MakesAndReopensDirectories) {
  const DirFd ws = DirFd::open(ws_);
  const DirFd run = ws.subdir("runs").subdir("a");
  EXPECT_EQ(run.path(), ws_ + "/runs/a");
  struct stat st {};
  ASSERT_EQ(stat((ws_ + "/runs/a").c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_NO_THROW(ws.subdir("runs")) << "an existing directory is fine";
}

TEST_F(DirFdTest, RefusesALinkWhereADirectoryIsExpected) {
  ASSERT_EQ(symlink(elsewhere_.c_str(), (ws_ + "/runs").c_str()), 0);
  const DirFd ws = DirFd::open(ws_);
  try {
    ws.subdir("runs");
    FAIL() << "followed the link";
  } catch (const UserError& e) {
    EXPECT_EQ(e.code(), exit_code::kCantWrite);
    EXPECT_EQ(std::string(e.what()),
              ws_ +
                  "/runs is a symbolic link; expected a directory (links are not followed in "
                  "the workspace): remove it");
  }
  EXPECT_EQ(rmdir(elsewhere_.c_str()), 0) << "nothing was made through the link";
}

TEST_F(DirFdTest, RefusesAFileWhereADirectoryIsExpected) {
  std::ofstream(ws_ + "/runs") << "x";
  EXPECT_THROW(DirFd::open(ws_).subdir("runs"), UserError);
}

TEST_F(DirFdTest, WriteReplacesALinkInsteadOfWritingThroughIt) {
  std::ofstream(elsewhere_ + "/target") << "precious";
  ASSERT_EQ(symlink((elsewhere_ + "/target").c_str(), (ws_ + "/plan.json").c_str()), 0);
  DirFd::open(ws_).write_file("plan.json", "{}");
  EXPECT_EQ(read(elsewhere_ + "/target"), "precious");
  struct stat st {};
  ASSERT_EQ(lstat((ws_ + "/plan.json").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(read(ws_ + "/plan.json"), "{}");
}

TEST_F(DirFdTest, WriteReplacesAHardLinkAndAFifo) {
  std::ofstream(elsewhere_ + "/target") << "precious";
  ASSERT_EQ(link((elsewhere_ + "/target").c_str(), (ws_ + "/last.pt").c_str()), 0);
  ASSERT_EQ(mkfifo((ws_ + "/plan.json").c_str(), 0644), 0);
  const DirFd ws = DirFd::open(ws_);
  ws.write_file("last.pt", "new");  // a FIFO opened for writing would block here instead
  ws.write_file("plan.json", "{}");
  EXPECT_EQ(read(elsewhere_ + "/target"), "precious");
  EXPECT_EQ(read(ws_ + "/last.pt"), "new");
  struct stat st {};
  ASSERT_EQ(lstat((ws_ + "/plan.json").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
}

TEST_F(DirFdTest, WriteRefusesADirectoryAndLeavesNoTemporary) {
  ASSERT_EQ(mkdir((ws_ + "/plan.json").c_str(), 0755), 0);
  EXPECT_THROW(DirFd::open(ws_).write_file("plan.json", "{}"), UserError);
  int entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(ws_)) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 1);
}

}  // namespace
}  // namespace dl::test
