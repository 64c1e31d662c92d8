// dl-train end to end with the new settings: an injected out-of-memory (DL_FAULT_OOM_ABOVE)
// halves the micro-batch once, says so in one line and the run completes; bf16 on the CPU (as the
// plan's DL_PRECISION) trains and resumes through checkpoints whose scaler state is empty, as
// Python saves a disabled GradScaler's; fp16 on the CPU and bad loss-scale settings end with
// exit 64 and one line naming the setting. Short runs of synthetic data on 1 thread.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "support/build_paths.h"
#include "support/data_sets.h"
#include "support/files.h"
#include "support/matchers.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace dl::test {
namespace {

const std::string kTrain = dl::test::kTrainBin;
constexpr std::chrono::seconds kRunTimeout{120};

class TrainCli : public ::testing::Test {
 protected:
  // 704 training and 64 validation images: 11 batches of 64.
  void SetUp() override { write_synthetic_idx(ws.path(), 704, 64); }

  // dl-train with `args`, started in `cwd` (the workspace when empty).
  Result train(const std::vector<std::string>& args, const EnvVars& env = {},
               const std::string& cwd = {}) {
    // The CPU explicitly: on a CUDA machine (tests/gpu runs these too) auto would pick the GPU.
    std::vector<std::string> argv = {kTrain, "--device",  "cpu",    "--threads",
                                     "1",    "--workers", "1",      "--monitor-every",
                                     "0",    "--data",    ws.path()};
    argv.insert(argv.end(), args.begin(), args.end());
    Process p(in_directory(cwd.empty() ? ws.path() : cwd, argv), env);
    return p.wait(kRunTimeout);
  }

  TempDir ws;
};

TEST_F(TrainCli, InjectedOutOfMemoryHalvesTheMicroBatchOnceAndCompletes) {
  const Result r =
      train({"--epochs", "1", "--limit-batches", "10", "--batch-size", "64", "--name", "oom"},
            {{"DL_FAULT_OOM_ABOVE", "32"}});
  ASSERT_EQ(r.code, 0) << show(r);
  const std::string line =
      "out of memory at batch 64: continuing with 2 micro-batches of 32 (gradient accumulation "
      "keeps the batch at 64)";
  const auto warnings = log_lines(r.out, "warning");
  EXPECT_EQ(std::count_if(warnings.begin(), warnings.end(),
                          [&](const std::string& w) { return contains(w, line); }),
            1)
      << show(r);
  // All 10 batches trained (the failed one retried), validation ran in the same pieces.
  EXPECT_TRUE(contains(r.out, "batch 10/10")) << show(r);
  const Csv metrics = read_csv(ws / "runs/oom/metrics.csv");
  ASSERT_EQ(metrics.rows.size(), 1u);
  EXPECT_EQ(metrics.header.back(), "bound");  // the time breakdown's verdict ends the row
  EXPECT_EQ(metrics.number(0, "overflow_steps"), 0.0);
}

TEST_F(TrainCli, Bf16OnTheCpuTrainsAndResumes) {
  // The precision arrives as dl-launch's plan hands it on.
  const EnvVars plan = {{"DL_PRECISION", "bf16"}};
  const Result first = train({"--epochs", "1", "--limit-batches", "4", "--name", "bf"}, plan);
  ASSERT_EQ(first.code, 0) << show(first);
  EXPECT_TRUE(contains(first.out, "precision bf16 (from DL_PRECISION)")) << show(first);
  // No loss scaling in bf16: the checkpoint's scaler_state_dict is {} (a disabled GradScaler's).
  EXPECT_FALSE(dl::model::load_checkpoint(ws / "runs/bf/last.pt").scaler.enabled);

  const Result second =
      train({"--epochs", "2", "--limit-batches", "4", "--name", "bf", "--resume"}, plan);
  ASSERT_EQ(second.code, 0) << show(second);
  EXPECT_TRUE(contains(second.out, "resumed from")) << show(second);
  EXPECT_TRUE(contains(second.out, "epoch 2/2:")) << show(second);
  const Csv metrics = read_csv(ws / "runs/bf/metrics.csv");
  ASSERT_EQ(metrics.rows.size(), 2u);
  EXPECT_EQ(dl::model::load_checkpoint(ws / "runs/bf/last.pt").epoch, 2);
}

TEST_F(TrainCli, Fp16OnTheCpuExits64WithOneLineAndNoRunDirectory) {
  const Result r = train({"--precision", "fp16", "--name", "f"});
  EXPECT_EQ(r.code, 64) << show(r);
  const auto errors = log_lines(r.out, "error");
  ASSERT_EQ(errors.size(), 1u) << show(r);
  EXPECT_TRUE(contains(errors[0], "--precision: fp16 needs a CUDA device")) << show(r);
  EXPECT_FALSE(file_exists(ws / "runs/f"));
}

TEST_F(TrainCli, BadLossScaleSettingsExit64NamingThem) {
  const Result r = train({"--loss-scale", "0", "--name", "x"});
  EXPECT_EQ(r.code, 64) << show(r);
  EXPECT_TRUE(contains(r.out, "--loss-scale: expected a number between 1 and 1e+38, got '0'"))
      << show(r);
  const Result i = train({"--name", "x"}, {{"DL_LOSS_SCALE_INTERVAL", "0"}});
  EXPECT_EQ(i.code, 64) << show(i);
  EXPECT_TRUE(contains(i.out, "DL_LOSS_SCALE_INTERVAL")) << show(i);
}

// --workspace as dl-launch honours it, from another working directory: runs/<name>/ and dl.conf
// are the workspace's, a relative --workspace is the caller's; DL_WORKSPACE and --workspace=X
// too. A workspace that does not exist: 66, naming it, nothing written.
TEST_F(TrainCli, WorkspaceIsHonouredFromAnotherDirectory) {
  TempDir caller;
  write_file(ws / "dl.conf", "epochs = 1\nlimit-batches = 2\n");
  const std::string relative = std::filesystem::relative(ws.path(), caller.path()).string();
  auto run_from_caller = [&](const std::vector<std::string>& args, const EnvVars& env = {}) {
    return train(args, env, caller.path());
  };
  const Result a = run_from_caller({"--workspace", relative, "--name", "a"});
  ASSERT_EQ(a.code, 0) << show(a);
  EXPECT_TRUE(file_exists(ws / "runs/a/last.pt")) << show(a);
  EXPECT_FALSE(file_exists(caller / "runs")) << "wrote runs/ in the caller's directory";
  EXPECT_TRUE(contains(a.out, "batch 2/2")) << "the workspace's dl.conf was not read: " << show(a);
  const Result b = run_from_caller({"--workspace=" + ws.path(), "--name", "b"});
  ASSERT_EQ(b.code, 0) << show(b);
  EXPECT_TRUE(file_exists(ws / "runs/b/last.pt"));
  const Result c = run_from_caller({"--name", "c"}, {{"DL_WORKSPACE", ws.path()}});
  ASSERT_EQ(c.code, 0) << show(c);
  EXPECT_TRUE(file_exists(ws / "runs/c/last.pt"));
  EXPECT_TRUE(list_dir(caller.path()).empty());

  const Result missing = run_from_caller({"--workspace", "no-such-dir", "--name", "d"});
  EXPECT_EQ(missing.code, 66) << show(missing);
  EXPECT_TRUE(contains(missing.out,
                       "--workspace: workspace " + caller.path() + "/no-such-dir does not exist"))
      << show(missing);
  EXPECT_TRUE(list_dir(caller.path()).empty());
}

}  // namespace
}  // namespace dl::test
