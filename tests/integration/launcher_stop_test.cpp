// A stop signal in each phase before training, sent to the real dl-launch as a user (Ctrl-C, kill,
// docker stop, a closed terminal) sends it, once the phase is seen to run (a probe's pid file, not
// a blind sleep) and after a random part of it: dl-launch exits 128+N with one line naming the
// phase, no probe (nor a process it started) outlives it, the caches are byte for byte what they
// were, nothing trained and no run directory was made. The phases:
//   - dl-train's own: reading the data's size (--data-facts) and the batch-size search
//     (--probe-batch), with a shell script standing in for dl-train (--trainer);
//   - a user's PyTorch script under dl_plan (Debian's python3-torch): the step probes of the
//     batch-size search (--memory-budget) and the loader probes of the worker calibration;
//   - starting the program or the ranks: a stop that came before the supervisors took the signals
//     over starts nothing (in a child process, against supervise and supervise_ranks directly).
// Also a stop that dl-launch inherited ignored (a background job of a non-interactive shell),
// and a dry run.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "launcher/rank_supervisor.h"
#include "launcher/stop_request.h"
#include "launcher/supervisor.h"
#include "support/build_paths.h"
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

const std::string kLaunch = dl::test::kLaunchBin;

// dl-train's stand-in: it answers --version, writes its pid (and a background child's, which the
// stop must kill too) where FAKE_DIR says, then either answers the probe (FAKE_MODE=answer: a
// batch of N samples holds N MB) or sleeps in it; started to train, it leaves a "trained" mark.
constexpr const char* kFakeTrainer = R"fake(#!/bin/sh
case "$1" in
  --version) echo "dl-train 0.1.0 (LibTorch 1.13.0)"; exit 0;;
  --probe-batch)
    if [ "$FAKE_MODE" = answer ]; then
      echo "{\"peak_bytes\": $(($2 * 1000000)), \"step_seconds\": 0.01}"; exit 0
    fi
    sleep 60 & echo $! > "$FAKE_DIR/pid-child-$$"
    echo $$ > "$FAKE_DIR/pid-probe-$2"; wait; exit 0;;
  --data-facts)
    sleep 60 & echo $! > "$FAKE_DIR/pid-child-$$"
    echo $$ > "$FAKE_DIR/pid-facts"; wait; exit 0;;
esac
echo trained > "$FAKE_DIR/trained"
)fake";

// A script written the tutorial's way with dl_plan. Each process writes its pid to TEST_DIR as
// it starts (named by DL_PROBE: "step", "loader" or "train"), each DataLoader worker its own
// once; a run that trains to its end leaves a "trained" mark.
constexpr const char* kScript = R"py(import os, time
DIR = os.environ["TEST_DIR"]
with open(os.path.join(DIR, "pid-%s-%d" % (os.environ.get("DL_PROBE", "train"), os.getpid())), "w") as f:
    f.write(str(os.getpid()))
import torch
from torch.utils.data import DataLoader, Dataset
import dl_plan

marked = False


class Costly(Dataset):
    def __len__(self):
        return 4096

    def __getitem__(self, i):
        global marked
        if not marked and torch.utils.data.get_worker_info() is not None:
            with open(os.path.join(DIR, "pid-worker-%d" % os.getpid()), "w") as f:
                f.write(str(os.getpid()))
            marked = True
        t = time.perf_counter()
        while time.perf_counter() - t < 0.002:
            pass
        return torch.full((8,), float(i)), i % 4


def main():
    plan = dl_plan.setup()
    ds = Costly()
    loader = dl_plan.loader(DataLoader(ds, **plan.dataloader_kwargs(ds)))
    model = torch.nn.Linear(8, 4)
    opt = torch.optim.AdamW(model.parameters())
    for steps, (x, y) in enumerate(loader):
        with dl_plan.step(), plan.autocast():
            held = torch.ones(x.shape[0], 4 << 18)
            loss = torch.nn.functional.cross_entropy(model(x), y) + held.sum() * 0
            loss.backward()
            opt.step()
            opt.zero_grad()
        if steps == 3:
            break
    if not dl_plan.probing():
        with open(os.path.join(DIR, "trained"), "w") as f:
            f.write("trained")


if __name__ == "__main__":
    main()
)py";

// Whether kPython imports torch, asked once when a test needs it: these tests need no LibTorch,
// so the build's answer (found only where it has LibTorch) is not theirs.
bool python_has_torch() {
  static const bool has = run({kPython, "-c", "import torch"}).code == 0;
  return has;
}

std::string signal_name(int sig) {
  return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "SIGHUP";
}

// A process gone (or a zombie waiting for init): nothing of it runs.
bool gone(pid_t pid) {
  if (kill(pid, 0) != 0) return true;
  const std::string stat = "/proc/" + std::to_string(pid) + "/stat";
  if (!file_exists(stat)) return true;
  const std::string text = read_file(stat);
  const auto paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] == 'Z';
}

// What one stop leaves to check.
struct Stopped {
  Result result;
  std::vector<std::string> stop_lines;  // stderr's lines that say "stopped by"
  std::vector<pid_t> alive;             // processes of a probe still running 1 s later
  int delay_ms = 0;
};

class LauncherStop : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(ws_);
    write_file(parent_.path() + "/fake-train", kFakeTrainer, 0755);
    write_file(ws_ + "/mytrain.py", kScript);
  }

  // dl-launch started from the workspace's parent with relative paths, as a user types it; with
  // `ignore_int`, from a shell that ignores SIGINT first, as a background job of a script.
  // Signalled with `sig` a random 0-300 ms after a file whose name starts with `marker` appears
  // in the test's folder.
  Stopped stop_when(const std::string& marker, int sig, std::vector<std::string> args,
                    EnvVars env = {}, bool ignore_int = false) {
    env.emplace_back("FAKE_DIR", parent_.path());
    env.emplace_back("TEST_DIR", parent_.path());
    std::vector<std::string> argv = {kLaunch, "--workspace", "ws", "--name", "s"};
    argv.insert(argv.end(), args.begin(), args.end());
    if (ignore_int) argv.insert(argv.begin(), {"/bin/sh", "-c", "trap '' INT; exec \"$@\"", "sh"});
    Process launcher(argv, env, kSchedulerVars, parent_.path());
    Stopped s;
    const auto deadline = std::chrono::steady_clock::now() + seconds(300);
    while (marker_files(marker).empty() && !gone(launcher.pid()) &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(20));
    }
    EXPECT_FALSE(marker_files(marker).empty()) << "no " << marker << " file";
    std::mt19937 random{std::random_device{}()};
    s.delay_ms = std::uniform_int_distribution<int>(0, 300)(random);
    std::this_thread::sleep_for(milliseconds(s.delay_ms));
    launcher.send_signal(sig);
    s.result = launcher.wait(seconds(60));
    for (const std::string& line : split_lines(s.result.err)) {
      if (contains(line, "stopped by")) s.stop_lines.push_back(line);
    }
    const auto pids = marker_files("pid-");
    for (int i = 0; i < 50; ++i) {
      s.alive.clear();
      for (const auto& f : pids) {
        // Empty where the process was killed between creating the file and writing to it.
        const std::string text = read_file(parent_.path() + "/" + f);
        if (text.find_first_of("0123456789") == std::string::npos) continue;
        const auto pid = static_cast<pid_t>(std::stol(text));
        if (!gone(pid)) s.alive.push_back(pid);
      }
      if (s.alive.empty()) break;
      std::this_thread::sleep_for(milliseconds(20));
    }
    return s;
  }

  std::vector<std::string> marker_files(const std::string& prefix) const {
    std::vector<std::string> found;
    for (const auto& name : list_dir(parent_.path())) {
      if (name.rfind(prefix, 0) == 0) found.push_back(name);
    }
    return found;
  }

  static std::vector<std::string> split_lines(const std::string& text) {
    std::vector<std::string> lines;
    std::size_t start = 0;
    for (std::size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1) {
      lines.push_back(text.substr(start, nl - start));
    }
    if (start < text.size()) lines.push_back(text.substr(start));
    return lines;
  }

  // A cache's bytes, or nullopt where there is none.
  std::optional<std::string> cache(const std::string& name) const {
    const std::string path = ws_ + "/.dl/" + name;
    if (!file_exists(path)) return std::nullopt;
    return read_file(path);
  }

  // The checks every stop before training shares, and the table's row.
  void expect_stopped(const Stopped& s, const std::string& phase, int sig,
                      const std::optional<std::string>& batch_cache_before,
                      const std::optional<std::string>& script_cache_before) {
    EXPECT_EQ(s.result.code, 128 + sig) << show(s.result);
    EXPECT_EQ(s.result.signal, 0) << "dl-launch itself died of the signal";
    ASSERT_EQ(s.stop_lines.size(), 1u) << s.result.err;
    EXPECT_TRUE(
        contains(s.stop_lines[0], "dl-launch: stopped by " + signal_name(sig) + " while " + phase))
        << s.stop_lines[0];
    EXPECT_TRUE(s.alive.empty()) << s.alive.size() << " process(es) of a probe still running, "
                                 << "the first " << s.alive.front();
    const bool caches_same = cache("batch-cache.json") == batch_cache_before &&
                             cache("script-cache.json") == script_cache_before;
    EXPECT_TRUE(caches_same) << "a cache was written";
    const bool untrained = !file_exists(parent_.path() + "/trained");
    EXPECT_TRUE(untrained) << "the program trained";
    EXPECT_FALSE(fs::exists(ws_ + "/runs/s")) << "a run directory was made";
    std::printf(
        "| %-22s | %-7s | %4d | %3d ms | %-s | caches unchanged: %s | nothing trained: %s |\n",
        phase.substr(0, 22).c_str(), signal_name(sig).c_str(), s.result.code, s.delay_ms,
        s.stop_lines[0].c_str(), caches_same ? "yes" : "NO", untrained ? "yes" : "NO");
  }

  TempDir parent_;
  std::string ws_ = parent_.path() + "/ws";
};

// ---------------------------------------------------------------------------------------------
// dl-train's phases, with the stand-in trainer

TEST_F(LauncherStop, ReadingTheDataSize) {
  fs::create_directories(parent_.path() + "/mydata");
  const Stopped s = stop_when("pid-facts", SIGINT,
                              {"--trainer", "./fake-train", "--data", "mydata", "--epochs", "1"});
  expect_stopped(s, "reading the data's size (fake-train --data-facts)", SIGINT, std::nullopt,
                 std::nullopt);
}

// The issue's own command, with a cache from an earlier search that --retune would replace.
TEST_F(LauncherStop, SearchingTheBatchSizeKeepsTheCache) {
  const std::vector<std::string> args = {
      "--trainer", "./fake-train", "--memory-budget", "600MiB", "--epochs", "1", "--limit-batches",
      "50"};
  std::vector<std::string> dry = args;
  dry.push_back("--dry-run");
  Process first(
      [&] {
        std::vector<std::string> argv = {kLaunch, "--workspace", "ws", "--name", "s"};
        argv.insert(argv.end(), dry.begin(), dry.end());
        return argv;
      }(),
      {{"FAKE_MODE", "answer"}, {"FAKE_DIR", parent_.path()}}, kSchedulerVars, parent_.path());
  const Result searched = first.wait(seconds(120));
  ASSERT_EQ(searched.code, 0) << show(searched);
  const auto before = cache("batch-cache.json");
  ASSERT_TRUE(before.has_value()) << "the first search wrote no cache";

  std::vector<std::string> retune = args;
  retune.push_back("--retune");
  const Stopped s = stop_when("pid-probe-", SIGTERM, retune);
  expect_stopped(s, "searching the batch size (fake-train --probe-batch ", SIGTERM, before,
                 std::nullopt);
}

// What the issue saw: a background job of a non-interactive shell inherits SIGINT ignored.
TEST_F(LauncherStop, AnInheritedIgnoredSigintStillStopsADryRun) {
  const Stopped s = stop_when(
      "pid-probe-", SIGINT,
      {"--trainer", "./fake-train", "--memory-budget", "600MiB", "--retune", "--dry-run"}, {},
      /*ignore_int=*/true);
  expect_stopped(s, "searching the batch size (fake-train --probe-batch ", SIGINT, std::nullopt,
                 std::nullopt);
}

TEST_F(LauncherStop, SighupWhileReadingTheDataSize) {
  fs::create_directories(parent_.path() + "/mydata");
  const Stopped s = stop_when("pid-facts", SIGHUP,
                              {"--trainer", "./fake-train", "--data", "mydata", "--dry-run"});
  expect_stopped(s, "reading the data's size (fake-train --data-facts)", SIGHUP, std::nullopt,
                 std::nullopt);
}

// ---------------------------------------------------------------------------------------------
// A user's script under dl_plan

TEST_F(LauncherStop, ScriptStepProbesOfTheBatchSearch) {
  if (!python_has_torch()) GTEST_SKIP() << kNoTorch;
  const Stopped s = stop_when(
      "pid-step-", SIGINT, {"--memory-budget", "600MiB", "--retune", "--", kPython, "mytrain.py"});
  expect_stopped(s, "searching the batch size (step probe, batch ", SIGINT, std::nullopt,
                 std::nullopt);
}

// Signalled while a loader probe's DataLoader workers run: they go with the probe.
TEST_F(LauncherStop, ScriptLoaderProbesOfTheWorkerCalibration) {
  if (!python_has_torch()) GTEST_SKIP() << kNoTorch;
  const Stopped s = stop_when("pid-worker-", SIGINT, {"--retune", "--", kPython, "mytrain.py"});
  expect_stopped(s, "calibrating the data workers (loader probe, ", SIGINT, std::nullopt,
                 std::nullopt);
}

TEST_F(LauncherStop, ScriptDryRunSigterm) {
  if (!python_has_torch()) GTEST_SKIP() << kNoTorch;
  const Stopped s = stop_when("pid-loader-", SIGTERM, {"--dry-run", "--", kPython, "mytrain.py"});
  expect_stopped(s, "calibrating the data workers (loader probe, ", SIGTERM, std::nullopt,
                 std::nullopt);
}

// ---------------------------------------------------------------------------------------------
// Starting: a stop the handler took before a supervisor blocked the signals starts nothing. Run
// in a child process, since the stop is for the whole process once received.

// In a child: install the handler, take `sig`, then `body`; exits 0 when body threw
// StopRequested for `sig`, 1 when it returned, 2 on another exception.
template <class Body>
int in_stopped_child(int sig, Body body) {
  const pid_t pid = fork();
  if (pid == 0) {
    install_stop_handlers();
    raise(sig);
    try {
      body();
      _exit(1);
    } catch (const StopRequested& e) {
      _exit(e.signal() == sig && e.exit_code() == 128 + sig ? 0 : 3);
    } catch (...) {
      _exit(2);
    }
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

TEST_F(LauncherStop, StartingTheProgramAfterAStopStartsNothing) {
  const std::string mark = parent_.path() + "/trained";
  SpawnSpec spec;
  spec.argv = {"/bin/sh", "-c", "echo started > '" + mark + "'"};
  spec.cwd = parent_.path();
  EXPECT_EQ(in_stopped_child(SIGTERM, [&] { supervise(spec); }), 0);
  EXPECT_FALSE(file_exists(mark)) << "the program was started";
}

TEST_F(LauncherStop, StartingTheRanksAfterAStopStartsNone) {
  const std::string mark = parent_.path() + "/trained";
  RankGroupSpec spec;
  spec.argv = {"/bin/sh", "-c", "echo started >> '" + mark + "'"};
  spec.cwd = parent_.path();
  spec.log_dir = parent_.path();
  for (int r = 0; r < 2; ++r) {
    RankSpawn spawn;
    spawn.global_rank = r;
    spec.ranks.push_back(spawn);
  }
  EXPECT_EQ(in_stopped_child(SIGINT, [&] { supervise_ranks(spec); }), 0);
  EXPECT_FALSE(file_exists(mark)) << "a rank was started";
}

}  // namespace
}  // namespace dl::test
