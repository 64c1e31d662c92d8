// Workspace checks, run names and atomic writes.
#include "core/workspace.h"
#include "core/files.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

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

// --- A refused start's run directory, and what a fresh start may not replace.

class RefusedRunDir : public WorkspaceTest {
 protected:
  void make(const std::vector<std::string>& files) {
    make_dirs(dir_ + "/runs/r");
    for (const auto& f : files) write_file_atomic(dir_ + "/runs/r/" + f, "x");
  }
  bool remove() {
    const int fd = ::open((dir_ + "/runs").c_str(), O_RDONLY | O_DIRECTORY);
    const bool removed = remove_refused_run_dir(fd, "r");
    ::close(fd);
    return removed;
  }
  bool present(const std::string& path) {
    struct stat st {};
    return lstat((dir_ + "/" + path).c_str(), &st) == 0;
  }
};

TEST_F(RefusedRunDir, WhatAStartWritesFirstIsRemovedWithTheDirectory) {
  make({"plan.json", "run.lock", "train.log", "plan-rank-4.json", "rank-0.log", "rank-12.log"});
  EXPECT_TRUE(remove());
  EXPECT_FALSE(present("runs/r"));
  EXPECT_TRUE(present("runs"));
}

TEST_F(RefusedRunDir, AnythingElseKeepsTheDirectoryWhole) {
  for (const std::string extra : {"last.pt", "metrics.csv", "notes.txt", "rank-x.log"}) {
    SCOPED_TRACE(extra);
    make({"plan.json", "run.lock", extra});
    EXPECT_FALSE(remove());
    EXPECT_TRUE(present("runs/r/plan.json"));
    EXPECT_TRUE(present("runs/r/" + extra));
    ::unlink((dir_ + "/runs/r/" + extra).c_str());
  }
}

TEST_F(RefusedRunDir, ALinkIsRemovedItselfNeverWhatItNames) {
  write_file_atomic(dir_ + "/precious", "keep me");
  make({"plan.json"});
  ASSERT_EQ(::symlink((dir_ + "/precious").c_str(), (dir_ + "/runs/r/train.log").c_str()), 0);
  EXPECT_TRUE(remove());
  EXPECT_FALSE(present("runs/r"));
  EXPECT_TRUE(present("precious"));
  // A link in place of the run directory itself is not followed.
  make_dirs(dir_ + "/elsewhere");
  write_file_atomic(dir_ + "/elsewhere/plan.json", "x");
  ASSERT_EQ(::symlink((dir_ + "/elsewhere").c_str(), (dir_ + "/runs/r").c_str()), 0);
  EXPECT_FALSE(remove());
  EXPECT_TRUE(present("elsewhere/plan.json"));
}

// The refusal's message for the run directory `dir`, or "" when it was not refused with 78.
std::string refusal(const std::string& dir) {
  try {
    refuse_overwrite(dir);
  } catch (const UserError& e) {
    return e.code() == exit_code::kRunExists ? e.what() : "";
  }
  return "";
}

TEST_F(WorkspaceTest, AFreshStartOverCheckpointsIsRefusedWith78NamingThem) {
  make_dirs(dir_ + "/runs/r");
  EXPECT_NO_THROW(refuse_overwrite(dir_ + "/runs/r"));
  write_file_atomic(dir_ + "/runs/r/best.pt", "x");
  EXPECT_EQ(run_checkpoints(dir_ + "/runs/r"), std::vector<std::string>{"best.pt"});
  // best.pt alone (stopped between the first epoch's two writes): --resume has nothing to load.
  const std::string best_only = refusal(dir_ + "/runs/r");
  EXPECT_NE(best_only.find("(best.pt) of an earlier run; it has no last.pt to continue from: "
                           "start it over with --overwrite"),
            std::string::npos)
      << best_only;
  EXPECT_EQ(best_only.find("--resume"), std::string::npos) << best_only;
  write_file_atomic(dir_ + "/runs/r/last.pt", "x");
  const std::string both = refusal(dir_ + "/runs/r");
  EXPECT_NE(both.find(dir_ + "/runs/r already holds checkpoints (last.pt, best.pt)"),
            std::string::npos)
      << both;
  EXPECT_NE(both.find("--resume"), std::string::npos) << both;
  EXPECT_NE(both.find("--overwrite"), std::string::npos) << both;
}

}  // namespace
}  // namespace dl::test
