// dl-train under crashes and exhausted resources, proven on the real program:
//   - kill -9 at random moments of a ResNet-50 run (checkpoints of about 280 MB), some of them
//     while a checkpoint is being written: every .pt left loads in Python's torch.load, no
//     temporary file piles up, and each restart with --resume continues from last.pt;
//   - every checkpoint's rename is preceded by an fsync of the file and followed by an fsync of
//     the directory (strace);
//   - the disk filling up before a checkpoint: exit 73 with one line, the previous checkpoint
//     intact, no partial file;
//   - a read-only workspace: dl-train and dl-launch exit 73 with one line before anything starts.
// The disk and the read-only workspace are tmpfs and bind mounts in a private mount namespace
// (unshare -m, as root); those tests skip where that is not possible.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "support/build_paths.h"
#include "support/data_sets.h"
#include "support/files.h"
#include "support/matchers.h"
#include "support/process.h"
#include "support/python.h"
#include "support/temp_dir.h"

namespace dl::test {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;

const std::string kTrain = dl::test::kTrainBin;
const std::string kLaunch = dl::test::kLaunchBin;
constexpr int kCantWrite = 73;

// A hang is a failure, but ResNet-50 on a busy 2-core machine must not fail a correct run.
constexpr seconds kRunTimeout{600};

std::vector<std::string> with(std::vector<std::string> argv, const std::vector<std::string>& more) {
  argv.insert(argv.end(), more.begin(), more.end());
  return argv;
}

// Names in `dir` that are temporaries of an atomic write ("<name>.tmp.<pid>").
std::vector<std::string> temporaries(const std::string& dir) {
  std::vector<std::string> found;
  for (const std::string& name : list_dir(dir)) {
    if (contains(name, ".tmp.")) found.push_back(name);
  }
  return found;
}

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : " ") + n;
  return s.empty() ? "none" : s;
}

// The one error line of a failed run, after checking that it is the only one and that nothing
// crashed.
std::string the_error_line(const Result& r) {
  EXPECT_EQ(r.signal, 0) << show(r);
  EXPECT_TRUE(log_lines(r.out, "critical").empty()) << show(r);
  EXPECT_FALSE(contains(r.out + r.err, "terminate called")) << show(r);
  const std::vector<std::string> errors = log_lines(r.out, "error");
  EXPECT_EQ(errors.size(), 1u) << show(r);
  return errors.empty() ? std::string() : errors[0];
}

// Names that appear in a directory (created, or renamed into it), through inotify: the moments
// of a run's checkpoint writes, waited for without polling.
class DirectoryWatch {
 public:
  explicit DirectoryWatch(const std::string& dir) : fd_(inotify_init1(IN_CLOEXEC | IN_NONBLOCK)) {
    if (fd_ >= 0) inotify_add_watch(fd_, dir.c_str(), IN_CREATE | IN_MOVED_TO);
  }
  ~DirectoryWatch() {
    if (fd_ >= 0) close(fd_);
  }
  DirectoryWatch(const DirectoryWatch&) = delete;
  DirectoryWatch& operator=(const DirectoryWatch&) = delete;

  // True once `count` names for which `match` holds have appeared; false on timeout, or as soon
  // as `writer` has exited (a refused start must not hold the test for the whole timeout).
  bool wait_for(const std::function<bool(const std::string&)>& match, int count,
                milliseconds timeout, pid_t writer) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    alignas(inotify_event) char buffer[4096];
    while (count > 0 && std::chrono::steady_clock::now() < deadline) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 1000) <= 0) {
        if (exited(writer)) break;
        continue;
      }
      const ssize_t n = read(fd_, buffer, sizeof buffer);
      for (ssize_t at = 0; at < n && count > 0;) {
        const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
        if (event->len > 0 && match(event->name)) --count;
        at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
      }
    }
    return count == 0;
  }

 private:
  // A zombie (exited, not yet reaped by its Process) or gone.
  static bool exited(pid_t pid) {
    const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
    const std::size_t paren = stat.rfind(')');
    return paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] == 'Z';
  }

  int fd_;
};

// Loads every .pt of a run directory with Python's torch.load, as a user would, and prints
// "<name>:<epoch>" for each; exits 1 naming the first that does not load.
constexpr const char* kLoadAll = R"(import glob, os, sys
import torch
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.pt"))):
    try:
        c = torch.load(path, map_location="cpu")
        assert type(c) is dict, type(c)
        assert {"model_state_dict", "optimizer_state_dict", "epoch", "val_acc"} <= set(c), sorted(c)
        assert len(c["model_state_dict"]) > 300, "not a ResNet-50 state"
    except Exception as e:
        print(os.path.basename(path), "does not load:", e)
        sys.exit(1)
    print(f"{os.path.basename(path)}:{c['epoch']}", end=" ")
print()
)";

// --- kill -9 -----------------------------------------------------------------------------------

// A restart as a scheduler makes it (deploy/vm/train.sh): --resume when last.pt is there; a run
// killed between its first epoch's best.pt and last.pt has nothing to resume and starts over
// (without --overwrite such a start is refused with 78, keeping best.pt).
void restart_flag(std::vector<std::string>& argv, std::int64_t last_epoch,
                  const std::string& run_dir) {
  if (last_epoch >= 0) {
    argv.push_back("--resume");
  } else if (file_exists(run_dir + "/best.pt")) {
    argv.push_back("--overwrite");
  }
}

// ResNet-50 (23.5 M parameters: checkpoints of about 280 MB with AdamW's moments) on 16 images of
// 28x28: one step and 4 validation images an epoch, then best.pt (when validation improved) and
// last.pt. Six kills, each followed by a restart with --resume: the odd ones 0-300 ms after the
// 1st, 2nd or 3rd checkpoint write of the run begins (in the middle of writing 280 MB; the first
// of them at once, so that one kill at least lands inside a write), the even
// ones 0-3 s after a new last.pt is in place (in the next epoch's start-up, step, validation or
// writes), so the run also makes progress and the resumes have something to resume.
// The workspace is in /dev/shm when it has room: what a kill leaves does not depend on where the
// page cache goes, and the test does not write gigabytes to a shared disk.
TEST(TrainerKill, EveryCheckpointLoadsNoTemporaryPilesUpAndResumeContinues) {
  if (!kPythonHasTorch) GTEST_SKIP() << kNoTorch;
  std::unique_ptr<TempDir> ws_holder;
  const char* shm = "/dev/shm";
  if (fs::is_directory(shm) && fs::space(shm).available > (2ull << 30)) {
    setenv("TMPDIR", shm, 1);
    ws_holder = std::make_unique<TempDir>();
    unsetenv("TMPDIR");
  } else {
    ws_holder = std::make_unique<TempDir>();
  }
  const TempDir& ws = *ws_holder;
  TempDir data;
  write_synthetic_idx(data.path(), 16, 4);
  write_file(ws / "load_all.py", kLoadAll);
  const std::string run_dir = ws / "runs/kill";
  fs::create_directories(run_dir);  // watched from the start
  const std::vector<std::string> common = {
      kTrain, "--data",          data.path(), "--model",         "resnet50", "--threads",
      "1",    "--workers",       "1",         "--monitor-every", "0",        "--batch-size",
      "2",    "--limit-batches", "1",         "--name",          "kill"};

  const unsigned seed = std::random_device()();
  SCOPED_TRACE("random seed " + std::to_string(seed));
  std::mt19937 random(seed);
  auto last_epoch = [&]() -> std::int64_t {
    if (!file_exists(run_dir + "/last.pt")) return -1;
    return dl::model::load_checkpoint(run_dir + "/last.pt").epoch;
  };

  int killed_mid_write = 0;
  int resumes_checked = 0;
  constexpr int kKills = 6;
  for (int i = 1; i <= kKills; ++i) {
    SCOPED_TRACE("kill " + std::to_string(i));
    const std::int64_t before = last_epoch();
    std::vector<std::string> argv = with(common, {"--epochs", "1000"});
    restart_flag(argv, before, run_dir);
    DirectoryWatch watch(run_dir);
    Process p(in_directory(ws.path(), argv));
    const std::string mine = ".tmp." + std::to_string(p.pid());
    // A checkpoint write of this process (report.html and the other small files are written
    // through temporaries too, in a few milliseconds: a kill "into" one of those says nothing).
    auto is_mine = [&](const std::string& name) {
      return name.size() > mine.size() && contains(name, ".pt" + mine) &&
             name.compare(name.size() - mine.size(), mine.size(), mine) == 0;
    };
    // The random moment: reading the program's output meanwhile (a line never printed).
    const std::string never = "\x01 no such line \x01";
    std::string moment;
    if (i % 2 == 1) {
      const int writes = std::uniform_int_distribution<int>(1, 3)(random);
      ASSERT_TRUE(watch.wait_for(is_mine, writes, kRunTimeout, p.pid()))
          << writes << " checkpoint writes did not begin: " << p.out();
      // The first at once: a write to /dev/shm on a quiet machine can end within 150 ms, and
      // one kill at least must land inside a write for the test to say anything about them.
      const int ms = i == 1 ? 0 : std::uniform_int_distribution<int>(0, 300)(random);
      moment = std::to_string(ms) + " ms into write " + std::to_string(writes);
      p.wait_for_line(never, milliseconds(ms));
    } else {
      ASSERT_TRUE(watch.wait_for([](const std::string& name) { return name == "last.pt"; }, 1,
                                 kRunTimeout, p.pid()))
          << "no last.pt was written: " << p.out();
      const int ms = std::uniform_int_distribution<int>(0, 3000)(random);
      moment = std::to_string(ms) + " ms after a new last.pt";
      p.wait_for_line(never, milliseconds(ms));
    }
    const bool writing = !temporaries(run_dir).empty();
    p.send_signal(SIGKILL);
    const Result r = p.wait(kRunTimeout);
    ASSERT_EQ(r.signal, SIGKILL) << "the run ended before the kill: " << show(r);

    // What is left: the killed writer's temporary at most, and checkpoints that load. A run
    // killed before its start-up cleanup (it logs the data line right after) may also leave the
    // one temporary of the writer before it, which the next restart removes.
    const std::vector<std::string> left = temporaries(run_dir);
    const bool cleaned = contains(r.out, " data: ");
    std::size_t earlier = 0;
    for (const std::string& name : left) {
      if (!contains(name, mine)) ++earlier;
    }
    if (cleaned) {
      EXPECT_EQ(earlier, 0u) << joined(left);
    } else {
      EXPECT_LE(earlier, 1u) << joined(left);
    }
    if (writing && left.size() > earlier) ++killed_mid_write;
    const Result loaded = run_python(ws / "load_all.py", {run_dir});
    EXPECT_EQ(loaded.code, 0) << show(loaded);
    // A restart that got as far as loading last.pt continued from its epoch.
    std::smatch m;
    if (before >= 0 &&
        std::regex_search(r.out, m, std::regex(R"(resumed from \S+ after epoch (\d+))"))) {
      EXPECT_EQ(std::stoll(m[1].str()), before) << r.out;
      ++resumes_checked;
    }
    std::cout << "kill " << i << ": " << moment << ", left " << joined(left) << ", checkpoints "
              << loaded.out << std::flush;
  }
  // At least one kill interrupted a write, or the test proved nothing about partial files; each
  // even kill came after a new last.pt, so the run made progress and resumed from it.
  EXPECT_GE(killed_mid_write, 1);
  EXPECT_GE(resumes_checked, 1);
  EXPECT_GE(last_epoch(), kKills / 2);

  // One more epoch to the end, from the newest good checkpoint.
  const std::int64_t before = last_epoch();
  std::vector<std::string> argv =
      with(common, {"--epochs", std::to_string(before < 0 ? 1 : before + 1)});
  restart_flag(argv, before, run_dir);
  const bool stale = !temporaries(run_dir).empty();
  Process final_run(in_directory(ws.path(), argv));
  const Result r = final_run.wait(kRunTimeout);
  ASSERT_EQ(r.code, 0) << show(r);
  if (stale) {
    EXPECT_TRUE(contains(r.out, "temporary file(s) of an interrupted checkpoint write: ")) << r.out;
  }
  EXPECT_EQ(temporaries(run_dir), std::vector<std::string>{});
  EXPECT_EQ(last_epoch(), before < 0 ? 1 : before + 1);
  const Result loaded = run_python(ws / "load_all.py", {run_dir});
  EXPECT_EQ(loaded.code, 0) << show(loaded);
}

// --- the rename is durable ---------------------------------------------------------------------

// LeakSanitizer cannot run under ptrace and then ends the program with 1, so a traced program of
// a sanitized build (tests/sanitizers) skips the leak check; elsewhere the variable is unused.
std::string no_leak_check_under_ptrace() {
  const char* options = std::getenv("ASAN_OPTIONS");
  return std::string(options ? options : "") + ":detect_leaks=0";
}

// strace shows, for each checkpoint: the temporary file opened as fd F, fsync(F), the rename
// over the checkpoint, then the directory opened as fd D and fsync(D).
TEST(TrainerCheckpointSync, RenameIsFollowedByAnFsyncOfTheDirectory) {
  const std::string strace = find_program("strace");
  if (strace.empty()) GTEST_SKIP() << "strace not in PATH (apt-get install strace)";
  if (run({strace, "-o", "/dev/null", "true"}).code != 0) GTEST_SKIP() << "ptrace not permitted";
  TempDir ws;
  write_synthetic_idx(ws.path(), 64, 16);
  const std::string trace = ws / "trace";
  const Result r =
      run(in_directory(ws.path(), {strace, "-f", "-o", trace, "-e",
                                   "trace=openat,fsync,fdatasync,rename,renameat,renameat2", kTrain,
                                   "--data", ws.path(), "--threads", "1", "--workers", "0",
                                   "--monitor-every", "0", "--epochs", "1", "--name", "s"}),
          {{"ASAN_OPTIONS", no_leak_check_under_ptrace()}});
  ASSERT_EQ(r.code, 0) << show(r);
  const std::string text = read_file(trace);
  for (const std::string name : {"best.pt", "last.pt"}) {
    SCOPED_TRACE(name);
    const std::regex open_temp("openat\\(AT_FDCWD, \"runs/s/" + name +
                               "\\.tmp\\.\\d+\", [^)]*\\) = (\\d+)");
    std::smatch m;
    ASSERT_TRUE(std::regex_search(text, m, open_temp)) << text;
    const std::string rest = m.suffix();
    const std::size_t sync_file = rest.find("fsync(" + m[1].str() + ")");
    const std::size_t renamed = rest.find("runs/s/" + name + "\"");
    ASSERT_NE(sync_file, std::string::npos) << text;
    ASSERT_NE(renamed, std::string::npos) << text;
    EXPECT_LT(sync_file, renamed) << "the data must reach the disk before the rename: " << rest;
    // The next call after the rename opens the directory, and the one after that syncs it.
    const std::string after = rest.substr(renamed);
    const std::regex dir_sync(
        R"(\n\d+ +openat\(AT_FDCWD, "runs/s", [^)]*O_DIRECTORY[^)]*\) = (\d+)\n\d+ +fsync\((\d+)\) += 0)");
    std::smatch d;
    ASSERT_TRUE(std::regex_search(after, d, dir_sync)) << after.substr(0, 600);
    EXPECT_EQ(static_cast<std::size_t>(d.position(0)), after.find('\n')) << after.substr(0, 600);
    EXPECT_EQ(d[1].str(), d[2].str()) << after.substr(0, 600);
  }
}

// --- disk full ---------------------------------------------------------------------------------

// A workspace on a tmpfs of 3 MB in a private mount namespace: the first epoch fits; then the
// disk is filled to its last 64 KB and a resumed run's next checkpoint cannot be written. The
// script copies what was left out of the namespace before it ends.
TEST(TrainerDiskFull, CheckpointFailsWith73KeepingThePreviousOneWhole) {
  const std::string unshare = find_program("unshare");
  if (unshare.empty()) GTEST_SKIP() << "unshare not in PATH";
  if (geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs needs root";
  TempDir ws, out, data;
  if (run({unshare, "-m", "sh", "-c", "mount -t tmpfs -o size=3m tmpfs \"$0\"", ws.path()}).code !=
      0) {
    GTEST_SKIP() << "cannot mount a tmpfs in a mount namespace";
  }
  write_synthetic_idx(data.path(), 64, 16);
  const std::string train = kTrain + " --data " + data.path() +
                            " --threads 1 --workers 0 --monitor-every 0 "
                            "--limit-batches 1 --batch-size 8 --name full";
  const std::string script =
      "mount -t tmpfs -o size=3m tmpfs \"$0\" && cd \"$0\" || exit 99\n" + train +
      " --epochs 1 > first.out 2>&1 || { cat first.out; exit 98; }\n"
      "free=$(df -Pk . | awk 'NR==2 {print $4}')\n"
      "dd if=/dev/zero of=filler bs=1k count=$((free - 64)) 2>/dev/null\n" +
      train +
      " --epochs 2 --resume\ncode=$?\nrm -f filler first.out\ncp -a . \"$1\"/\nexit $code\n";
  const Result r = run({unshare, "-m", "sh", "-c", script, ws.path(), out.path()});
  ASSERT_NE(r.code, 99) << show(r);
  ASSERT_NE(r.code, 98) << show(r);

  EXPECT_EQ(r.code, kCantWrite) << show(r);
  const std::string error = the_error_line(r);
  EXPECT_TRUE(contains(error, "No space left on device")) << error;
  EXPECT_TRUE(std::regex_search(error, std::regex(R"(checkpoint runs/full/(best|last)\.pt)")))
      << error;
  // Whole previous checkpoints, no partial file, and metrics for the completed epoch only.
  const std::string run_dir = out / "runs/full";
  EXPECT_EQ(temporaries(run_dir), std::vector<std::string>{}) << joined(list_dir(run_dir));
  EXPECT_EQ(dl::model::load_checkpoint(run_dir + "/last.pt").epoch, 1);
  EXPECT_EQ(dl::model::load_checkpoint(run_dir + "/best.pt").epoch, 1);
  EXPECT_EQ(read_csv(run_dir + "/metrics.csv").rows.size(), 1u);
}

// --- read-only workspace -----------------------------------------------------------------------

// The workspace bind-mounted read-only (EROFS: root cannot write either), once empty and once
// with the run directory of an earlier run: refused before the data are read.
// Whether `dir` can be bind-mounted read-only in a private mount namespace here: not in a chroot
// (unshare cannot change the root's propagation there) nor without the capability.
bool can_make_read_only(const std::string& unshare, const std::string& dir) {
  return run({unshare, "-m", "sh", "-c",
              "mount --bind \"$0\" \"$0\" && mount -o remount,bind,ro \"$0\"", dir})
             .code == 0;
}

TEST(TrainerReadOnly, WorkspaceRefusedWith73BeforeAnythingStarts) {
  const std::string unshare = find_program("unshare");
  if (unshare.empty()) GTEST_SKIP() << "unshare not in PATH";
  if (geteuid() != 0) GTEST_SKIP() << "bind mounts need root";
  TempDir ws, data;
  if (!can_make_read_only(unshare, ws.path())) {
    GTEST_SKIP() << "cannot bind-mount read-only in a mount namespace here";
  }
  write_synthetic_idx(data.path(), 64, 16);
  auto read_only = [&](const std::string& name) {
    const std::string script =
        "mount --bind \"$0\" \"$0\" && mount -o remount,bind,ro \"$0\" && cd \"$0\" || exit 99\n"
        "exec \"$@\"\n";
    return run({unshare, "-m", "sh", "-c", script, ws.path(), kTrain, "--data", data.path(),
                "--threads", "1", "--workers", "0", "--monitor-every", "0", "--epochs", "1",
                "--name", name});
  };
  Result r = read_only("fresh");
  if (r.code == 99) GTEST_SKIP() << "cannot bind-mount in a mount namespace: " << show(r);
  EXPECT_EQ(r.code, kCantWrite) << show(r);
  std::string error = the_error_line(r);
  EXPECT_TRUE(contains(error, "runs/fresh")) << error;
  EXPECT_TRUE(contains(error, "Read-only file system")) << error;
  EXPECT_FALSE(contains(r.out, "data:")) << "the data were read before the refusal: " << r.out;
  EXPECT_EQ(list_dir(ws.path()), std::vector<std::string>{});

  fs::create_directories(ws / "runs/old");
  r = read_only("old");
  EXPECT_EQ(r.code, kCantWrite) << show(r);
  error = the_error_line(r);
  EXPECT_TRUE(contains(error, "runs/old")) << error;
  EXPECT_TRUE(contains(error, "Read-only file system")) << error;
  EXPECT_FALSE(contains(r.out, "data:")) << r.out;
  EXPECT_EQ(list_dir(ws / "runs/old"), std::vector<std::string>{});
}

// dl-launch checks the workspace before it plans or starts anything: the same mount, one line on
// stderr naming the workspace and the reason.
TEST(LauncherReadOnly, WorkspaceRefusedWith73BeforeAnythingStarts) {
  const std::string unshare = find_program("unshare");
  if (unshare.empty()) GTEST_SKIP() << "unshare not in PATH";
  if (geteuid() != 0) GTEST_SKIP() << "bind mounts need root";
  TempDir ws;
  if (!can_make_read_only(unshare, ws.path())) {
    GTEST_SKIP() << "cannot bind-mount read-only in a mount namespace here";
  }
  const std::string script =
      "mount --bind \"$0\" \"$0\" && mount -o remount,bind,ro \"$0\" || exit 99\nexec \"$@\"\n";
  const Result r = run({unshare, "-m", "sh", "-c", script, ws.path(), kLaunch, "--workspace",
                        ws.path(), "--epochs", "1", "--nvml-library", "/nonexistent"});
  if (r.code == 99) GTEST_SKIP() << "cannot bind-mount in a mount namespace: " << show(r);
  EXPECT_EQ(r.code, kCantWrite) << show(r);
  EXPECT_EQ(r.signal, 0) << show(r);
  EXPECT_TRUE(r.out.empty()) << "planned or started before the refusal: " << show(r);
  const std::string line = r.err.substr(0, r.err.find('\n'));
  EXPECT_EQ(r.err, line + "\n") << "more than one line: " << r.err;
  EXPECT_TRUE(contains(line, ws.path())) << line;
  EXPECT_TRUE(contains(line, "is on a read-only file system")) << line;
  EXPECT_TRUE(contains(line, "mount it read-write")) << line;
  EXPECT_EQ(list_dir(ws.path()), std::vector<std::string>{});
}

}  // namespace
}  // namespace dl::test
