// Integration tests of `dl-launch init DIR`, run as the real binary: a new workspace holds the
// template's files (and dl-launch can plan a run in it), a second init keeps every existing file,
// a directory that cannot be created and a missing template each end in one line and their own
// exit code, and as root the files created in a user's directory are that user's.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
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
const std::string kTemplate = dl::test::kTemplateSource;  // the source tree's workspace_template
const std::string kFakeNvml = dl::test::kFakeNvml;

// Every file a new workspace starts with.
const std::vector<std::string> kTemplateFiles = {"dl.conf", "data/README.md", "python/train.py",
                                                 "python/export_torchscript.py"};

uid_t owner_of(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0 ? st.st_uid : static_cast<uid_t>(-1);
}

// The template the binary finds by itself (the source tree's, compiled in) unless a test says.
Result init(const std::string& dir, const EnvVars& env = {}) {
  return run({kLaunch, "init", dir}, env);
}

void expect_one_line_error(const Result& r, int code, const std::vector<std::string>& mentions) {
  EXPECT_EQ(r.code, code) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  for (const auto& m : mentions) EXPECT_TRUE(contains(r.err, m)) << m << " not in: " << r.err;
  EXPECT_FALSE(contains(r.err, "internal error")) << r.err;
}

TEST(LauncherInit, CreatesTheDirectoryAndCopiesTheTemplate) {
  TempDir scratch;
  const std::string ws = scratch / "projects/my-project";  // parents are created too
  const Result r = init(ws);
  ASSERT_EQ(r.code, 0) << r.err;
  for (const auto& f : kTemplateFiles) {
    ASSERT_TRUE(file_exists(ws + "/" + f)) << f << " was not created";
    EXPECT_EQ(read_file(ws + "/" + f), read_file(kTemplate + "/" + f)) << f;
    EXPECT_TRUE(contains(r.out, "created  " + f)) << r.out;
  }
  EXPECT_FALSE(file_exists(ws + "/python/__pycache__")) << "compiled Python was copied";
  // It says what to run next, with the workspace named.
  EXPECT_TRUE(contains(r.out, "dl-launch --workspace " + ws + " -- python3 python/train.py"))
      << r.out;
  // The new workspace is one dl-launch accepts: its dl.conf parses, its plan is made.
  const Result plan =
      run({kLaunch, "--nvml-library", kFakeNvml, "--dry-run", "--workspace", ws, "--", "true"});
  EXPECT_EQ(plan.code, 0) << plan.err;
  EXPECT_TRUE(contains(plan.out, "config     " + real_path(ws) + "/dl.conf")) << plan.out;
}

TEST(LauncherInit, ASecondInitKeepsExistingFiles) {
  TempDir ws;
  ASSERT_EQ(init(ws.path()).code, 0);
  write_file(ws / "dl.conf", "epochs = 7  # mine\n");
  ASSERT_EQ(unlink((ws / "data/README.md").c_str()), 0);

  const Result again = init(ws.path());
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(read_file(ws / "dl.conf"), "epochs = 7  # mine\n") << "dl.conf was overwritten";
  EXPECT_TRUE(contains(again.out, "skipped  dl.conf")) << again.out;
  EXPECT_TRUE(contains(again.out, "skipped  python/train.py")) << again.out;
  // A file where the template has a directory is kept, and the directory left out.
  TempDir other;
  write_file(other / "python", "my own file\n");
  const Result beside = init(other.path());
  ASSERT_EQ(beside.code, 0) << beside.err;
  EXPECT_EQ(read_file(other / "python"), "my own file\n");
  EXPECT_TRUE(contains(beside.out, "skipped  python/")) << beside.out;
  // What was missing is filled in.
  EXPECT_TRUE(contains(again.out, "created  data/README.md")) << again.out;
  EXPECT_EQ(read_file(ws / "data/README.md"), read_file(kTemplate + "/data/README.md"));
}

TEST(LauncherInit, UnwritableParentExits73AndCreatesNothing) {
  TempDir scratch;
  std::vector<std::string> argv = {kLaunch, "init", scratch / "ws"};
  if (geteuid() == 0) {
    // Root writes anywhere: run as nobody, for whom a root-owned 0755 directory is read-only.
    const std::string setpriv = find_program("setpriv");
    if (setpriv.empty()) GTEST_SKIP() << "running as root and setpriv is not in PATH";
    ASSERT_EQ(chmod(scratch.path().c_str(), 0755), 0);
    argv.insert(argv.begin(), {setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"});
  } else {
    ASSERT_EQ(chmod(scratch.path().c_str(), 0555), 0);
  }
  expect_one_line_error(run(argv), 73, {scratch / "ws", "init: cannot create"});
  EXPECT_EQ(list_dir(scratch.path()), std::vector<std::string>{});
}

TEST(LauncherInit, MissingTemplateExits66NamingWhereItLooked) {
  TempDir scratch;
  const std::string nowhere = scratch / "no-template";
  const Result r = init(scratch / "ws", {{"DL_TEMPLATE_DIR", nowhere}});
  expect_one_line_error(r, 66, {nowhere, "DL_TEMPLATE_DIR"});
  EXPECT_FALSE(file_exists(scratch / "ws"));
}

TEST(LauncherInit, TemplateDirFromTheEnvironmentWins) {
  TempDir tmpl, scratch;
  write_file(tmpl / "dl.conf", "# a site's own template\n");
  write_file(tmpl / "notes.txt", "hello\n");
  const Result r = init(scratch / "ws", {{"DL_TEMPLATE_DIR", tmpl.path()}});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(list_dir(scratch / "ws"), (std::vector<std::string>{"dl.conf", "notes.txt"}));
  EXPECT_EQ(read_file(scratch / "ws/dl.conf"), "# a site's own template\n");
}

TEST(LauncherInit, WithoutADirectoryIsAUsageError) {
  expect_one_line_error(run({kLaunch, "init"}), 64, {"init", "dl-launch init"});
  const Result help = run({kLaunch, "init", "--help"});
  EXPECT_EQ(help.code, 0);
  EXPECT_TRUE(contains(help.out, "dl-launch init DIR")) << help.out;
}

// The container (root) initialising the host user's bind mount: the files are the user's.
TEST(LauncherInit, AsRootTheFilesBelongToTheDirectorysOwner) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (the container's case)";
  TempDir ws;
  ASSERT_EQ(chown(ws.path().c_str(), 65534, 65534), 0);
  const Result r = init(ws / "sub");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(owner_of(ws / "sub"), 65534u);
  for (const auto& f : kTemplateFiles) EXPECT_EQ(owner_of(ws / "sub/" + f), 65534u) << f;
  EXPECT_EQ(owner_of(ws / "sub/python"), 65534u);
}

}  // namespace
}  // namespace dl::test
