// The workspace template's Python programs, run for real (label "python"; skipped where
// DL_TEST_PYTHON cannot import torch and torchvision, or Fashion-MNIST is not installed):
//   * python/export_torchscript.py scripts its model, and the real dl-train trains that file
//     and writes last.pt;
//   * python/train.py under the real dl-launch takes the plan (workers, threads, batch size,
//     device, precision, run directory) and the forwarded settings (epochs, data,
//     limit-batches), trains, and writes checkpoints Python loads as the documented dict; it
//     finds dl_plan through the PYTHONPATH dl-launch sets, nothing exported;
//   * under --nproc-per-node 2 it trains data-parallel (each rank half of the batches, rank 0
//     alone writing), --resume continues the run with one process, and a fresh start over its
//     checkpoints is refused;
//   * dl-launch measures its workers with loader probes of the template itself.
// A few dozen batches of a small Fashion-MNIST subset each, so the suite stays under a minute.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "support/build_paths.h"
#include "support/data_sets.h"
#include "support/files.h"
#include "support/matchers.h"
#include "support/process.h"
#include "support/python.h"
#include "support/temp_dir.h"

namespace dl::test {
namespace {

const std::string kTrain = dl::test::kTrainBin;
const std::string kLaunch = dl::test::kLaunchBin;
const std::string kTemplate = dl::test::kTemplateSource;
const std::string kCompanion = dl::test::kPythonSource;  // dl_plan's folder, for train.py run alone

constexpr std::chrono::seconds kRunTimeout{300};

class TemplatePython : public ::testing::Test {
 protected:
  void SetUp() override {
    if (fashion_mnist_dir().empty()) GTEST_SKIP() << "Fashion-MNIST is not installed";
    if (!kPythonHasTorchvision) GTEST_SKIP() << kNoTorchvision;
    data_ = std::make_unique<TempDir>();
    write_fashion_subset(data_->path(), 2048, 500);
    // The workspace as `dl-launch init` makes it.
    const Result init = run({kLaunch, "init", ws.path()}, {{"DL_TEMPLATE_DIR", kTemplate}});
    ASSERT_EQ(init.code, 0) << show(init);
  }

  std::string data() const { return data_->path(); }

  TempDir ws;
  std::unique_ptr<TempDir> data_;
};

TEST_F(TemplatePython, ExportedTorchScriptModelTrainsInDlTrain) {
  const Result exported = run({kPython, ws / "python/export_torchscript.py"});
  ASSERT_EQ(exported.code, 0) << show(exported);
  ASSERT_TRUE(file_exists(ws / "model.pt")) << "not written where it says: " << exported.out;
  // It tells the user how to train it.
  EXPECT_TRUE(contains(exported.out, "--model model.pt")) << exported.out;

  Process p(in_directory(ws.path(), {kTrain, "--model", "model.pt", "--data", data(), "--epochs",
                                     "1", "--limit-batches", "20", "--threads", "1", "--workers",
                                     "1", "--monitor-every", "0", "--name", "ts"}));
  const Result r = p.wait(kRunTimeout);
  ASSERT_EQ(r.code, 0) << show(r);
  EXPECT_TRUE(file_exists(ws / "runs/ts/last.pt")) << show(r);
  const Csv metrics = read_csv(ws / "runs/ts/metrics.csv");
  ASSERT_EQ(metrics.rows.size(), 1u);
  // Chance is 10%: the scripted model learnt something in 20 batches.
  EXPECT_GT(metrics.number(0, "val_acc"), 0.3);

  // dl-train's checkpoint loads back into the Python class, by its parameter names.
  const Result back = run({kPython, "-c",
                           "import sys; sys.path.insert(0, sys.argv[1]); import torch\n"
                           "from export_torchscript import Net\n"
                           "ckpt = torch.load(sys.argv[2], map_location='cpu')\n"
                           "Net().load_state_dict(ckpt['model_state_dict'], strict=True)\n"
                           "print('loaded epoch', ckpt['epoch'])\n",
                           ws / "python", ws / "runs/ts/last.pt"});
  EXPECT_EQ(back.code, 0) << show(back);
  EXPECT_TRUE(contains(back.out, "loaded epoch 1")) << show(back);
}

TEST_F(TemplatePython, TrainPyUnderDlLaunchTakesThePlanAndSavesCheckpoints) {
  // Settings on dl-launch's command line reach train.py as DL_* variables; the plan's own
  // (workers, threads, batch size) come from the launcher.
  Process p({kLaunch, "--workspace",     ws.path(), "--name",       "py",   "--workers",
             "1",     "--threads",       "1",       "--batch-size", "32",   "--epochs",
             "1",     "--limit-batches", "30",      "--data",       data(), "--",
             kPython, "python/train.py"});
  const Result r = p.wait(kRunTimeout);
  ASSERT_EQ(r.code, 0) << show(r);
  const std::string run_dir = ws / "runs/py";
  for (const char* f : {"plan.json", "metrics.csv", "last.pt", "best.pt"}) {
    EXPECT_TRUE(file_exists(run_dir + "/" + f)) << f << " missing\n" << show(r);
  }
  EXPECT_TRUE(contains(r.err, "1 threads, 1 workers, batch 32, 1 epochs")) << show(r);
  EXPECT_TRUE(contains(r.err, "plan: workers 1")) << show(r);
  // The per-epoch line gives the share of time spent waiting for data.
  EXPECT_TRUE(contains(r.err, "data wait")) << show(r);
  const Csv metrics = read_csv(run_dir + "/metrics.csv");
  ASSERT_EQ(metrics.rows.size(), 1u);
  EXPECT_GT(metrics.number(0, "val_acc"), 0.3);

  // The checkpoint is the dict dl-train writes too; 30 AdamW steps were taken (limit-batches).
  const Result check =
      run({kPython, "-c",
           "import sys, torch\n"
           "c = torch.load(sys.argv[1], map_location='cpu')\n"
           "assert type(c) is dict, type(c)\n"
           "for k in ('model_state_dict', 'optimizer_state_dict', 'scaler_state_dict', 'epoch',"
           " 'val_acc'):\n"
           "    assert k in c, (k, sorted(c))\n"
           "assert c['epoch'] == 1 and isinstance(c['val_acc'], float)\n"
           "steps = {int(s['step']) for s in c['optimizer_state_dict']['state'].values()}\n"
           "assert steps == {30}, steps\n"
           "print('ok')\n",
           run_dir + "/last.pt"});
  EXPECT_EQ(check.code, 0) << show(check);
}

// docker stop: dl-launch forwards SIGTERM to the program's group (train.py and its DataLoader
// worker); train.py finishes the step in progress, saves last.pt with its position in the epoch
// (dl_plan.TrainingState) and exits 128+15.
TEST_F(TemplatePython, TrainPySavesLastPtOnAStopSignal) {
  // stderr joins stdout, where the test can wait for a progress line before signalling.
  Process p({kLaunch,
             "--workspace",
             ws.path(),
             "--name",
             "stop",
             "--workers",
             "1",
             "--threads",
             "1",
             "--epochs",
             "1",
             "--data",
             data(),
             "--log-every",
             "2",
             "--",
             "/bin/sh",
             "-c",
             "exec \"$0\" \"$@\" 2>&1",
             kPython,
             "python/train.py"});
  ASSERT_TRUE(wait_for_output(p, "batch 4/", std::chrono::seconds(120)))
      << "no progress line: " << p.out();
  p.send_signal(SIGTERM);
  const Result r = p.wait(kRunTimeout);
  EXPECT_EQ(r.code, 128 + SIGTERM) << show(r);
  EXPECT_TRUE(contains(r.out, "SIGTERM received")) << show(r);
  ASSERT_TRUE(file_exists(ws / "runs/stop/last.pt")) << show(r);
  EXPECT_FALSE(file_exists(ws / "runs/stop/best.pt")) << "an unfinished epoch is nobody's best";
  const Result check = run({kPython, "-c",
                            "import sys, torch\n"
                            "c = torch.load(sys.argv[1], map_location='cpu')\n"
                            "assert c['epoch'] == 0 and c['optimizer_state_dict']['state'], c\n",
                            ws / "runs/stop/last.pt"});
  EXPECT_EQ(check.code, 0) << show(check);
}

// The optimizer's step count in a checkpoint (every parameter's, which must agree).
std::string optimizer_steps(const std::string& checkpoint) {
  const Result r = run({kPython, "-c",
                        "import sys, torch\n"
                        "c = torch.load(sys.argv[1], map_location='cpu')\n"
                        "steps = {int(s['step']) for s in c['optimizer_state_dict']['state']."
                        "values()}\n"
                        "assert not any(k.startswith('module.') for k in c['model_state_dict'])\n"
                        "print('epoch', c['epoch'], 'steps', sorted(steps))\n",
                        checkpoint});
  return r.code == 0 ? r.out : show(r);
}

TEST_F(TemplatePython, TrainPyTrainsDataParallelOnTwoRanksAndResumesOnOne) {
  // 2048 samples, batch 32: 64 batches for one process, 32 for each of two ranks.
  Process two({kLaunch,  "--workspace", ws.path(), "--name",       "ddp",   "--nproc-per-node",
               "2",      "--workers",   "0",       "--batch-size", "32",    "--epochs",
               "1",      "--data",      data(),    "--",           kPython, "python/train.py",
               "--json", "--log-every", "0"});
  const Result r = two.wait(kRunTimeout);
  ASSERT_EQ(r.code, 0) << show(r);
  const std::string run_dir = ws / "runs/ddp";
  // Rank 0's output is the terminal's, its stderr on stderr as without dl-launch; rank 1's is
  // its log.
  EXPECT_TRUE(contains(r.err, "2 ranks (DDP, 32 a rank)")) << show(r);
  EXPECT_TRUE(contains(read_file(run_dir + "/rank-0.log"), "2 ranks (DDP, 32 a rank)"));
  // One epoch line, rank 0's: 32 steps a rank, 2 x 32 x 32 samples.
  EXPECT_TRUE(contains(r.out, "\"samples\": 2048")) << show(r);
  EXPECT_TRUE(contains(r.out, "\"world_size\": 2")) << show(r);
  EXPECT_EQ(read_csv(run_dir + "/metrics.csv").rows.size(), 1u);
  EXPECT_TRUE(contains(optimizer_steps(run_dir + "/last.pt"), "epoch 1 steps [32]"))
      << optimizer_steps(run_dir + "/last.pt");
  // Rank 1 trained (its log exists) and wrote no epoch line.
  const std::string rank1 = read_file(run_dir + "/rank-1.log");
  EXPECT_FALSE(contains(rank1, "epoch 1/1")) << rank1;

  Process again({kLaunch,
                 "--workspace",
                 ws.path(),
                 "--name",
                 "ddp",
                 "--workers",
                 "0",
                 "--batch-size",
                 "32",
                 "--epochs",
                 "2",
                 "--limit-batches",
                 "10",
                 "--data",
                 data(),
                 "--resume",
                 "--",
                 kPython,
                 "python/train.py",
                 "--log-every",
                 "0"});
  const Result resumed = again.wait(kRunTimeout);
  ASSERT_EQ(resumed.code, 0) << show(resumed);
  EXPECT_TRUE(contains(resumed.err, "1 epoch(s) done, optimizer step 32")) << show(resumed);
  EXPECT_TRUE(contains(optimizer_steps(run_dir + "/last.pt"), "epoch 2 steps [42]"))
      << optimizer_steps(run_dir + "/last.pt");
  EXPECT_EQ(read_csv(run_dir + "/metrics.csv").rows.size(), 2u);

  const Result fresh = run({kLaunch, "--workspace", ws.path(), "--name", "ddp", "--workers", "0",
                            "--data", data(), "--", kPython, "python/train.py"});
  EXPECT_EQ(fresh.code, 78) << show(fresh);
  EXPECT_TRUE(contains(fresh.err, "--resume")) << show(fresh);
}

TEST_F(TemplatePython, DlLaunchMeasuresTheTemplatesWorkers) {
  const Result r = run({kLaunch, "--workspace", ws.path(), "--dry-run", "--json", "--data", data(),
                        "--", kPython, "python/train.py"});
  ASSERT_EQ(r.code, 0) << show(r);
  // Loader probes of train.py itself answered: the plan's workers are measured, not guessed.
  EXPECT_TRUE(contains(r.out, "\"worker_trials\"")) << show(r);
  EXPECT_TRUE(contains(r.out, "measured: 0 -> ")) << show(r);
  EXPECT_TRUE(contains(r.err, "loader probe 0 workers")) << show(r);
  EXPECT_FALSE(contains(r.err, "does not speak the probe protocol")) << show(r);
}

TEST_F(TemplatePython, TrainPyNamesBadInputInOneLine) {
  const Result r = run({kPython, ws / "python/train.py", "--data", ws / "no-such-data"},
                       {{"DL_WORKSPACE", ws.path()}, {"PYTHONPATH", kCompanion}});
  EXPECT_EQ(r.code, 66) << show(r);
  EXPECT_TRUE(contains(r.err, "no-such-data")) << show(r);
  EXPECT_FALSE(contains(r.err, "Traceback")) << show(r);
}

}  // namespace
}  // namespace dl::test
