// A workspace's owner attacking the root launcher. In the image dl-launch runs as root on a
// directory another user mounted; that user (uid 65534 here) plants links, FIFOs and hard links
// where dl-launch writes, pointing at a root-owned directory. Whatever they plant, nothing is
// created or changed outside the workspace: dl-launch writes with the owner's credentials
// (core/act_as.h) relative to held directories (core/dir_fd.h), and a link where one of its
// directories belongs is refused with one line naming it (exit 73). The workspace's dl.conf is
// theirs too: it may not set what decides dl-launch's own rights (the library it loads, whether
// the program runs as root), it is read with the owner's rights (a link to root's file is refused
// by the kernel) and without waiting on a FIFO, and the batch-size probes run as the owner. Needs
// root; skips otherwise.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "support/build_paths.h"
#include "support/files.h"
#include "support/matchers.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace dl::test {
namespace {

const std::string kLaunch = dl::test::kLaunchBin;
const std::string kChild = dl::test::kTestChild;
const std::string kFakeNvml = dl::test::kFakeNvml;
constexpr uid_t kNobody = 65534;

uid_t owner_of(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0 ? st.st_uid : static_cast<uid_t>(-1);
}

class WorkspaceAttack : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (the container's launcher)";
    // The layout of the image: a root-owned directory, and the user's workspace beside it.
    ASSERT_EQ(chmod(tmp_.path().c_str(), 0755), 0);
    ASSERT_EQ(mkdir(ws_.c_str(), 0755), 0);
    ASSERT_EQ(chown(ws_.c_str(), kNobody, kNobody), 0);
    ASSERT_EQ(mkdir(target_.c_str(), 0755), 0);
    write_file(target_ + "/precious", "root's");
  }

  // What the workspace's owner plants: made here, then given to them, as if they had made it.
  void plant_link(const std::string& at, const std::string& to) const {
    ASSERT_EQ(symlink(to.c_str(), at.c_str()), 0) << at;
    ASSERT_EQ(lchown(at.c_str(), kNobody, kNobody), 0);
  }
  void plant_dir(const std::string& at) const {
    ASSERT_EQ(mkdir(at.c_str(), 0755), 0) << at;
    ASSERT_EQ(chown(at.c_str(), kNobody, kNobody), 0);
  }

  Result launch(const std::vector<std::string>& extra) const {
    std::vector<std::string> argv = {kLaunch, "--nvml-library", kFakeNvml, "--workspace",
                                     ws_,     "--workers",      "1"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.insert(argv.end(), {"--", kChild, "exit", "0"});
    return run(argv);
  }

  // The root-owned directory holds exactly what it held: nothing made or changed through a link.
  void expect_target_untouched() const {
    EXPECT_EQ(list_dir(target_), std::vector<std::string>{"precious"});
    EXPECT_EQ(read_file(target_ + "/precious"), "root's");
    EXPECT_EQ(owner_of(target_ + "/precious"), 0u);
  }

  TempDir tmp_;
  const std::string ws_ = tmp_.path() + "/ws";
  const std::string target_ = tmp_.path() + "/root-owned";
};

TEST_F(WorkspaceAttack, RunsLinkedToARootDirectoryIsRefused) {
  plant_link(ws_ + "/runs", target_);
  const Result r = launch({"--name", "r1"});
  EXPECT_EQ(r.code, 73) << r.err;
  EXPECT_TRUE(contains(r.err, ws_ + "/runs is a symbolic link; expected a directory")) << r.err;
  expect_target_untouched();
}

TEST_F(WorkspaceAttack, DotDlLinkedToARootDirectoryIsRefused) {
  // nobody's passwd home is not theirs, so dl-launch makes them one in .dl/home.
  plant_link(ws_ + "/.dl", target_);
  const Result r = launch({"--name", "r1"});
  EXPECT_EQ(r.code, 73) << r.err;
  EXPECT_TRUE(contains(r.err, ws_ + "/.dl is a symbolic link; expected a directory")) << r.err;
  expect_target_untouched();
}

TEST_F(WorkspaceAttack, RunDirectoryLinkedToARootDirectoryIsRefused) {
  plant_dir(ws_ + "/runs");
  plant_link(ws_ + "/runs/r1", target_);
  const Result r = launch({"--name", "r1"});
  EXPECT_EQ(r.code, 73) << r.err;
  EXPECT_TRUE(contains(r.err, ws_ + "/runs/r1 is a symbolic link; expected a directory")) << r.err;
  expect_target_untouched();
}

TEST_F(WorkspaceAttack, HomeLinkedToARootDirectoryIsRefused) {
  plant_dir(ws_ + "/.dl");
  plant_link(ws_ + "/.dl/home", target_);
  const Result r = launch({"--name", "r1"});
  EXPECT_EQ(r.code, 73) << r.err;
  EXPECT_TRUE(contains(r.err, ws_ + "/.dl/home is a symbolic link")) << r.err;
  expect_target_untouched();
}

TEST_F(WorkspaceAttack, PlanJsonLinkedToARootFileIsReplacedNotWrittenThrough) {
  plant_dir(ws_ + "/runs");
  plant_dir(ws_ + "/runs/r1");
  plant_link(ws_ + "/runs/r1/plan.json", target_ + "/precious");
  const Result r = launch({"--name", "r1"});
  ASSERT_EQ(r.code, 0) << r.err;
  expect_target_untouched();
  EXPECT_EQ(owner_of(ws_ + "/runs/r1/plan.json"), kNobody);
  EXPECT_TRUE(contains(read_file(ws_ + "/runs/r1/plan.json"), "\"run_name\": \"r1\""));
}

TEST_F(WorkspaceAttack, PlanJsonAsAFifoIsReplacedWithoutHanging) {
  plant_dir(ws_ + "/runs");
  plant_dir(ws_ + "/runs/r1");
  ASSERT_EQ(mkfifo((ws_ + "/runs/r1/plan.json").c_str(), 0644), 0);
  ASSERT_EQ(chown((ws_ + "/runs/r1/plan.json").c_str(), kNobody, kNobody), 0);
  const Result r = launch({"--name", "r1"});
  ASSERT_EQ(r.code, 0) << r.err;
  struct stat st {};
  ASSERT_EQ(lstat((ws_ + "/runs/r1/plan.json").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
}

TEST_F(WorkspaceAttack, RunLockLinkedOrAFifoIsRefused) {
  plant_dir(ws_ + "/runs");
  plant_dir(ws_ + "/runs/r1");
  plant_link(ws_ + "/runs/r1/run.lock", target_ + "/precious");
  Result r = launch({"--name", "r1"});
  EXPECT_EQ(r.code, 73) << r.err;
  EXPECT_TRUE(contains(r.err, "run.lock")) << r.err;
  expect_target_untouched();

  ASSERT_EQ(unlink((ws_ + "/runs/r1/run.lock").c_str()), 0);
  ASSERT_EQ(mkfifo((ws_ + "/runs/r1/run.lock").c_str(), 0644), 0);
  ASSERT_EQ(chown((ws_ + "/runs/r1/run.lock").c_str(), kNobody, kNobody), 0);
  r = launch({"--name", "r1"});
  EXPECT_EQ(r.code, 73) << r.err;
  EXPECT_TRUE(contains(r.err, "run.lock is not a plain file")) << r.err;
}

TEST_F(WorkspaceAttack, HardLinkToARootFileIsNotOpenedWithRootsRights) {
  // A hard link named run.lock to root's file: opening it for writing is the owner's right only.
  plant_dir(ws_ + "/runs");
  plant_dir(ws_ + "/runs/r1");
  ASSERT_EQ(link((target_ + "/precious").c_str(), (ws_ + "/runs/r1/run.lock").c_str()), 0);
  const Result r = launch({"--name", "r1"});
  EXPECT_EQ(r.code, 73) << r.err;
  EXPECT_TRUE(contains(r.err, "cannot open " + ws_ + "/runs/r1/run.lock (Permission denied)"))
      << r.err;
  expect_target_untouched();
}

TEST_F(WorkspaceAttack, WhatTheOwnerCannotWriteRootDoesNotWriteForThem) {
  // A root-owned runs/ inside the workspace: the owner cannot create in it, so neither does the
  // launcher acting for them (before, root would have, and chowned the result).
  ASSERT_EQ(mkdir((ws_ + "/runs").c_str(), 0755), 0);
  const Result r = launch({"--name", "r1"});
  EXPECT_EQ(r.code, 73) << r.err;
  EXPECT_TRUE(contains(r.err, "cannot create " + ws_ + "/runs/r1 (Permission denied)")) << r.err;
  EXPECT_TRUE(list_dir(ws_ + "/runs").empty());
}

// The workspace's dl.conf is its owner's file, read by root: what it says and where it points.
class WorkspaceConfigAttack : public WorkspaceAttack {
 protected:
  void plant_config(const std::string& text) const {
    write_file(ws_ + "/dl.conf", text);
    ASSERT_EQ(chown((ws_ + "/dl.conf").c_str(), kNobody, kNobody), 0);
  }
  // dl-launch as the image starts it: no --nvml-library, no --run-as-owner.
  Result launch_plain(const EnvVars& env = {}) const {
    return run({kLaunch, "--workspace", ws_, "--workers", "1", "--name", "r1", "--", kChild, "env",
                ws_ + "/child-env"},
               env);
  }
};

TEST_F(WorkspaceConfigAttack, ConfigCannotLoadALibraryIntoTheLauncher) {
  // Before: dl-launch, root, dlopen()ed the file dl.conf named, running its constructors as root.
  plant_config("nvml-library = " + kFakeNvml + "\n");
  const Result r = launch_plain({{"FAKE_NVML_LOADED", target_ + "/loaded"}});
  EXPECT_EQ(r.code, 65) << r.err;
  EXPECT_TRUE(contains(r.err, "config file " + ws_ +
                                  "/dl.conf: 'nvml-library' cannot be set inside the workspace's "
                                  "own dl.conf (dl-launch loads the library into its own process, "
                                  "as root in the image); give it as --nvml-library or "
                                  "DL_NVML_LIBRARY"))
      << r.err;
  expect_target_untouched();  // no "loaded": the library was never opened
  EXPECT_FALSE(file_exists(ws_ + "/runs"));
}

TEST_F(WorkspaceConfigAttack, ConfigCannotMakeTheProgramRunAsRoot) {
  plant_config("run-as-owner = false\n");
  const Result r = launch_plain();
  EXPECT_EQ(r.code, 65) << r.err;
  EXPECT_TRUE(contains(r.err,
                       "'run-as-owner' cannot be set inside the workspace's own dl.conf "
                       "(it would let the workspace's owner run the program as root)"))
      << r.err;
  EXPECT_FALSE(file_exists(ws_ + "/child-env"));
  EXPECT_FALSE(file_exists(ws_ + "/runs"));
  // Without the line the program runs, as the owner.
  plant_config("epochs = 1\n");
  const Result ok = launch_plain();
  ASSERT_EQ(ok.code, 0) << ok.err;
  EXPECT_TRUE(contains(read_file(ws_ + "/child-env"), "uid=65534\n"));
}

TEST_F(WorkspaceConfigAttack, ConfigLinkedToARootOnlyFileIsNotRead) {
  // Before: root read the file and quoted its first line in the error.
  write_file(target_ + "/shadow", "root:$6$not-for-the-owner:19000:0:99999:7:::\n", 0600);
  plant_link(ws_ + "/dl.conf", target_ + "/shadow");
  const Result r = launch_plain();
  EXPECT_EQ(r.code, 77) << r.err;
  EXPECT_TRUE(
      contains(r.err, "config file " + ws_ + "/dl.conf: cannot be read (Permission denied)"))
      << r.err;
  EXPECT_FALSE(contains(r.out + r.err, "not-for-the-owner")) << r.err;
  // Behind a directory only root may enter, the file cannot even be looked at: an error still,
  // not a workspace without a dl.conf.
  ASSERT_EQ(mkdir((target_ + "/private").c_str(), 0700), 0);
  write_file(target_ + "/private/dl.conf", "epochs = 7\n");
  ASSERT_EQ(unlink((ws_ + "/dl.conf").c_str()), 0);
  plant_link(ws_ + "/dl.conf", target_ + "/private/dl.conf");
  const Result hidden = launch_plain();
  EXPECT_EQ(hidden.code, 77) << hidden.err;
  EXPECT_TRUE(contains(hidden.err, "config file " + ws_ + "/dl.conf: Permission denied"))
      << hidden.err;
}

TEST_F(WorkspaceConfigAttack, ConfigAsAFifoIsRefusedWithoutWaiting) {
  // Before: dl-launch waited for a writer for ever.
  ASSERT_EQ(mkfifo((ws_ + "/dl.conf").c_str(), 0644), 0);
  ASSERT_EQ(chown((ws_ + "/dl.conf").c_str(), kNobody, kNobody), 0);
  const Result r = launch_plain();
  EXPECT_EQ(r.code, 66) << r.err;
  EXPECT_TRUE(contains(r.err, "config file " + ws_ +
                                  "/dl.conf: is a FIFO, not a regular file; expected a file of "
                                  "key = value lines"))
      << r.err;
}

TEST_F(WorkspaceConfigAttack, BatchSizeProbesRunAsTheOwner) {
  // Before: the probes of the batch-size search ran as root in the workspace.
  const std::string trainer = tmp_.path() + "/dl-train";
  write_file(trainer, R"SH(#!/bin/sh
[ "$1" = --probe-batch ] || exit 0
id -u >> probe-uids
echo "{\"batch\":$2,\"fits\":true,\"out_of_memory\":false,\"peak_bytes\":$(( $2 * 1000 )),\"step_seconds\":0.01,\"device\":\"cpu\",\"precision\":\"fp32\",\"error\":\"\"}"
)SH",
             0755);
  const Result r = run({kLaunch, "--nvml-library", kFakeNvml, "--workspace", ws_, "--trainer",
                        trainer, "--memory-budget", "1GiB", "--samples", "1000", "--dry-run"});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string uids = read_file(ws_ + "/probe-uids");
  ASSERT_FALSE(uids.empty()) << "no probe ran: " << r.err;
  EXPECT_EQ(uids.find_first_not_of("65534\n"), std::string::npos) << uids;
  EXPECT_EQ(owner_of(ws_ + "/probe-uids"), kNobody);
}

}  // namespace
}  // namespace dl::test
