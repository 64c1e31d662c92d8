// The workspace template's Python programs, run for real (label "python"; skipped where
// DL_TEST_PYTHON cannot import torch and torchvision, or Fashion-MNIST is not installed):
//   * python/export_torchscript.py scripts its model, and the real dl-train trains that file
//     and writes last.pt;
//   * python/train.py under the real dl-launch takes the plan (workers, threads, batch size,
//     device, precision, run directory) and the forwarded settings (epochs, data,
//     limit-batches), trains, and writes checkpoints Python loads as the documented dict.
// A few dozen batches of a small Fashion-MNIST subset each, so the suite stays under a minute.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "support/data_sets.h"
#include "support/files.h"
#include "support/matchers.h"
#include "support/process.h"
#include "support/python.h"
#include "support/temp_dir.h"

namespace dl::test {
namespace {

const std::string kTrain = DL_TRAIN_BIN;
const std::string kLaunch = DL_LAUNCH_BIN;
const std::string kTemplate = DL_TEMPLATE_SOURCE;

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
// worker); train.py ends the epoch early, saves last.pt and exits 128+15.
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

TEST_F(TemplatePython, TrainPyNamesBadInputInOneLine) {
  const Result r = run({kPython, ws / "python/train.py", "--data", ws / "no-such-data"},
                       {{"DL_WORKSPACE", ws.path()}});
  EXPECT_EQ(r.code, 66) << show(r);
  EXPECT_TRUE(contains(r.err, "no-such-data")) << show(r);
  EXPECT_FALSE(contains(r.err, "Traceback")) << show(r);
}

}  // namespace
}  // namespace dl::test
