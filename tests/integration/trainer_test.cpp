// End-to-end tests of dl-train, and of dl-launch starting it: real training runs on real data
// (Debian's Fashion-MNIST, small subsets of it, and images written here) checking what a user
// relies on. A short epoch reaches the accuracy bar; a resumed run ends with the same weights as
// an uninterrupted one; a model scripted in Python trains here and its checkpoint loads back into
// Python; bad input ends with the documented exit code and one clear line; undecodable images are
// skipped and counted; a stop signal saves the weights; dl-launch's plan reaches the trainer; the
// TensorBoard events file decodes with tools that are not ours.
//
// Every run uses 1 compute thread, 1 loader worker, no resource monitor and few batches, so the
// whole suite takes well under a minute and a half on a 2-core machine. One compute thread, not
// two, is what dl-launch plans for 2 cores (cores - workers), and it keeps the suite fast when
// anything else runs: with a second busy process on 2 cores, LibTorch's 2 OpenMP threads trained
// 6 times slower than 1 (about 200 against 1200 samples/s). Each run has its own temporary
// workspace as working directory, so no dl.conf or runs/ of the caller's is read or written.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <memory>
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
using std::chrono::seconds;

const std::string kTrain = dl::test::kTrainBin;
const std::string kLaunch = dl::test::kLaunchBin;

// dl-train's documented exit codes (its --help, launcher/errors.h), spelled out: a change to the
// contract must show up here.
constexpr int kUsage = 64;
constexpr int kBadData = 65;
constexpr int kMissing = 66;
constexpr int kCantWrite = 73;
constexpr int kDiverged = 80;

// A hang is a failure, but a busy 2-core machine must not fail a correct run.
constexpr seconds kRunTimeout{300};

// dl-train with the settings that keep runs short on a small machine, then `args`.
std::vector<std::string> train_argv(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {kTrain, "--threads",       "1", "--workers",
                                   "1",    "--monitor-every", "0"};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

// Runs dl-train in `workspace` (its working directory: --name puts the run in runs/<name>).
Result train(const std::string& workspace, const std::vector<std::string>& args,
             const EnvVars& env = {}) {
  Process process(in_directory(workspace, train_argv(args)), env);
  return process.wait(kRunTimeout);
}

// 4096 training samples of Fashion-MNIST (the 60 batches of 64 the TorchScript test trains on)
// and 1000 test samples, as raw IDX files written once per test process: a few megabytes that
// load at once, where the full set costs seconds to decompress and 10000 validation samples.
// "" when Fashion-MNIST is not installed.
const std::string& mini_fashion() {
  static const std::unique_ptr<TempDir> dir = [] {
    if (fashion_mnist_dir().empty()) return std::unique_ptr<TempDir>();
    auto d = std::make_unique<TempDir>();
    write_fashion_subset(d->path(), 4096, 1000);
    return d;
  }();
  static const std::string path = dir ? dir->path() : std::string();
  return path;
}

// The largest absolute difference between two tensors of the same shape.
double max_abs_diff(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
}

std::int64_t extra_int(const dl::model::CheckpointData& c, const std::string& key) {
  return std::get<std::int64_t>(c.extra.at(key));
}

// --- a. accuracy -------------------------------------------------------------------------------

TEST(TrainerAccuracy, ShortEpochOnFashionMnistReachesTheBar) {
  const std::string fashion = fashion_mnist_dir();
  if (fashion.empty()) GTEST_SKIP() << kNoFashion;
  TempDir ws;
  const Result r = train(ws.path(), {"--data", fashion, "--epochs", "1", "--limit-batches", "150",
                                     "--batch-size", "64", "--name", "acc"});
  ASSERT_EQ(r.code, 0) << show(r);

  const std::string run = ws / "runs/acc";
  const Csv metrics = read_csv(run + "/metrics.csv");
  ASSERT_EQ(metrics.rows.size(), 1u) << read_file(run + "/metrics.csv");
  EXPECT_EQ(metrics.number(0, "epoch"), 1.0);
  // The bar: PyTorch's reference CNN reaches about 88% on the 10000 test images after a full
  // epoch (937 batches); 150 batches reach about 80%. 75% leaves room for the differences between
  // seeds and kernels while still failing a broken loader, normalisation or optimizer: chance is
  // 10%, and 20 good batches already reach about 65%.
  EXPECT_GE(metrics.number(0, "val_acc"), 0.75);
  EXPECT_EQ(metrics.number(0, "skipped_samples"), 0.0);
  ASSERT_TRUE(file_exists(run + "/last.pt"));
  EXPECT_TRUE(file_exists(run + "/best.pt"));
  // The checkpoint holds the epoch the CSV reports (the CSV rounds to 6 decimals).
  const dl::model::CheckpointData last = dl::model::load_checkpoint(run + "/last.pt");
  EXPECT_EQ(last.epoch, 1);
  EXPECT_NEAR(last.val_acc, metrics.number(0, "val_acc"), 1e-6);
  EXPECT_TRUE(contains(read_file(run + "/train.log"), "validation accuracy"))
      << read_file(run + "/train.log");
}

// --- b. resume ---------------------------------------------------------------------------------

TEST(TrainerResume, ResumedRunEndsWithTheWeightsOfAnUninterruptedOne) {
  const std::string data = mini_fashion();
  if (data.empty()) GTEST_SKIP() << kNoFashion;
  TempDir ws;
  const std::vector<std::string> common = {"--data", data, "--limit-batches", "20"};
  auto args = [&](std::vector<std::string> more) {
    more.insert(more.begin(), common.begin(), common.end());
    return more;
  };
  const Result a = train(ws.path(), args({"--epochs", "2", "--name", "a"}));
  ASSERT_EQ(a.code, 0) << show(a);
  const Result b1 = train(ws.path(), args({"--epochs", "1", "--name", "b"}));
  ASSERT_EQ(b1.code, 0) << show(b1);
  const Result b2 = train(ws.path(), args({"--epochs", "2", "--name", "b", "--resume"}));
  ASSERT_EQ(b2.code, 0) << show(b2);
  EXPECT_TRUE(contains(b2.out, "resumed from")) << show(b2);

  const auto ca = dl::model::load_checkpoint(ws / "runs/a/last.pt");
  const auto cb = dl::model::load_checkpoint(ws / "runs/b/last.pt");
  EXPECT_EQ(ca.epoch, 2);
  EXPECT_EQ(cb.epoch, 2);
  EXPECT_EQ(extra_int(ca, "global_step"), 40);
  EXPECT_EQ(extra_int(cb, "global_step"), 40);

  // Tolerance 1e-6 (in practice the difference is 0): both runs use the same seed and thread
  // count, the CPU kernels are deterministic for a fixed thread count, the loader's order depends
  // only on (seed, epoch), and the resumed run restores the weights, AdamW's moments and step
  // counts and the learning rate of the epoch. Anything the resume loses (a moment, a step, the
  // schedule) moves the weights by about the learning rate, 1e-3 or more.
  ASSERT_EQ(ca.model_state.size(), cb.model_state.size());
  for (std::size_t i = 0; i < ca.model_state.size(); ++i) {
    const auto& [name, ta] = ca.model_state[i];
    const auto& tb = cb.model_state[i].second;
    ASSERT_EQ(name, cb.model_state[i].first);
    ASSERT_EQ(ta.sizes(), tb.sizes()) << name;
    EXPECT_LE(max_abs_diff(ta, tb), 1e-6) << name;
  }
  ASSERT_EQ(ca.optimizer.state.size(), cb.optimizer.state.size());
  ASSERT_FALSE(ca.optimizer.state.empty());
  for (const auto& [index, sa] : ca.optimizer.state) {
    const auto& sb = cb.optimizer.state.at(index);
    EXPECT_EQ(sa.step, 40) << "parameter " << index;
    EXPECT_EQ(sa.step, sb.step) << "parameter " << index;
    EXPECT_LE(max_abs_diff(sa.exp_avg, sb.exp_avg), 1e-6) << "parameter " << index;
    EXPECT_LE(max_abs_diff(sa.exp_avg_sq, sb.exp_avg_sq), 1e-6) << "parameter " << index;
  }

  // The resumed run appended its epoch to the first part's metrics, and validated the same model.
  const Csv mb = read_csv(ws / "runs/b/metrics.csv");
  const Csv ma = read_csv(ws / "runs/a/metrics.csv");
  ASSERT_EQ(mb.rows.size(), 2u) << read_file(ws / "runs/b/metrics.csv");
  ASSERT_EQ(ma.rows.size(), 2u);
  EXPECT_EQ(mb.number(0, "epoch"), 1.0);
  EXPECT_EQ(mb.number(1, "epoch"), 2.0);
  EXPECT_EQ(mb.number(1, "val_acc"), ma.number(1, "val_acc"));
  EXPECT_EQ(mb.number(1, "lr"), ma.number(1, "lr"));
}

// --- c. TorchScript ----------------------------------------------------------------------------

// The module both Python scripts import: a model for 1x28x28 images and 10 classes.
constexpr const char* kPythonNet = R"(import torch
from torch import nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 16, 3, padding=1)
        self.fc = nn.Linear(16 * 14 * 14, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv(x)), 2)
        return self.fc(torch.flatten(x, 1))
)";

// Scripts Net to argv[1]. TorchScript reads the class's source, so this must run from a file.
constexpr const char* kPythonScript = R"(import sys
import torch
from net import Net

torch.manual_seed(0)
torch.jit.script(Net()).save(sys.argv[1])
)";

// Loads dl-train's last.pt as a Python user would and checks it: the layout, strict loading into
// the same class, AdamW's state, trained (not initial) weights, and the validation accuracy that
// dl-train reported, recomputed here on the same images normalised as dl-train does (mean and
// standard deviation of the training images; the mini set has fewer than the 5000 it measures).
constexpr const char* kPythonCheck = R"(import sys
import torch
from net import Net

ckpt_path, data_dir, scripted_path, steps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
ckpt = torch.load(ckpt_path, map_location="cpu")
assert type(ckpt) is dict, type(ckpt)
for key in ("model_state_dict", "optimizer_state_dict", "scaler_state_dict", "epoch", "val_acc"):
    assert key in ckpt, (key, sorted(ckpt))
assert ckpt["epoch"] == 1, ckpt["epoch"]
assert isinstance(ckpt["val_acc"], float), type(ckpt["val_acc"])
assert isinstance(ckpt["scaler_state_dict"], dict), type(ckpt["scaler_state_dict"])

model = Net()
model.load_state_dict(ckpt["model_state_dict"], strict=True)
optimizer = torch.optim.AdamW(model.parameters())
optimizer.load_state_dict(ckpt["optimizer_state_dict"])
found = sorted({int(s["step"]) for s in optimizer.state.values()})
assert found == [steps], found

initial = torch.jit.load(scripted_path).state_dict()
assert any(not torch.equal(initial[k], v) for k, v in model.state_dict().items()), "untrained"

model.eval()
with torch.no_grad():
    logits = model(torch.zeros(4, 1, 28, 28))
assert logits.shape == (4, 10) and bool(torch.isfinite(logits).all()), logits


def idx(name, header):
    with open(data_dir + "/" + name, "rb") as f:
        return torch.frombuffer(bytearray(f.read()[header:]), dtype=torch.uint8)


pixels = idx("train-images-idx3-ubyte", 16).double() / 255
mean, std = pixels.mean().item(), pixels.std(unbiased=False).item()
images = idx("t10k-images-idx3-ubyte", 16).view(-1, 1, 28, 28).float()
labels = idx("t10k-labels-idx1-ubyte", 8).long()
with torch.no_grad():
    predicted = model((images - 255 * mean) / (255 * std)).argmax(1)
accuracy = (predicted == labels).double().mean().item()
# 1% = 10 of the 1000 images: float rounding may flip a near tie or two, not more.
assert abs(accuracy - ckpt["val_acc"]) <= 0.01, (accuracy, ckpt["val_acc"])
print("checkpoint ok, accuracy", accuracy)
)";

TEST(TrainerTorchScript, ModelScriptedInPythonTrainsAndLoadsBackIntoPython) {
  const std::string data = mini_fashion();
  if (data.empty()) GTEST_SKIP() << kNoFashion;
  if (!kPythonHasTorch) GTEST_SKIP() << kNoTorch;
  TempDir ws;
  write_file(ws / "net.py", kPythonNet);
  write_file(ws / "script_net.py", kPythonScript);
  write_file(ws / "check_checkpoint.py", kPythonCheck);
  const std::string scripted = ws / "net.pt";
  const Result made = run({kPython, ws / "script_net.py", scripted});
  ASSERT_EQ(made.code, 0) << show(made);

  const Result r = train(ws.path(), {"--data", data, "--model", scripted, "--epochs", "1",
                                     "--limit-batches", "60", "--name", "ts"});
  ASSERT_EQ(r.code, 0) << show(r);
  const Csv metrics = read_csv(ws / "runs/ts/metrics.csv");
  ASSERT_EQ(metrics.rows.size(), 1u);
  // Chance is 10%; 60 batches of this small network reach about 80%.
  EXPECT_GT(metrics.number(0, "val_acc"), 0.5);

  const Result checked =
      run({kPython, ws / "check_checkpoint.py", ws / "runs/ts/last.pt", data, scripted, "60"});
  EXPECT_EQ(checked.code, 0) << show(checked);
  EXPECT_TRUE(contains(checked.out, "checkpoint ok")) << show(checked);
}

// --- d. bad input ------------------------------------------------------------------------------

class TrainerBadInput : public ::testing::Test {
 protected:
  // The failure a user should see: the exit code, exactly one error line that names what was
  // wrong, and neither an internal error nor an uncaught exception.
  static void expect_clean_failure(const Result& r, int code,
                                   const std::vector<std::string>& mentions) {
    EXPECT_EQ(r.code, code) << show(r);
    EXPECT_EQ(r.signal, 0) << show(r);
    EXPECT_TRUE(log_lines(r.out, "critical").empty()) << show(r);
    EXPECT_FALSE(contains(r.out + r.err, "terminate called")) << show(r);
    const std::vector<std::string> errors = log_lines(r.out, "error");
    ASSERT_EQ(errors.size(), 1u) << show(r);
    for (const std::string& m : mentions) {
      EXPECT_TRUE(contains(errors[0], m)) << "'" << m << "' not in: " << errors[0];
    }
  }

  TempDir ws;
};

TEST_F(TrainerBadInput, MissingDataPathExits66NamingIt) {
  const std::string missing = ws / "no-such-data";
  const Result r = train(ws.path(), {"--data", missing, "--epochs", "1", "--name", "x"});
  expect_clean_failure(r, kMissing, {missing});
  // A refused start leaves no run directory (train.log, run.lock) behind.
  EXPECT_FALSE(file_exists(ws / "runs/x")) << show(r);
}

TEST_F(TrainerBadInput, FreshStartOverAnEarlierRunsCheckpointsIs78AndChangesNothing) {
  const std::string dir = ws.path();
  write_synthetic_idx(dir, 10, 10);
  fs::create_directories(dir + "/runs/x");
  write_file(dir + "/runs/x/best.pt", "an earlier run's best");
  const Result r = train(dir, {"--data", dir, "--epochs", "1", "--name", "x"});
  // best.pt alone: nothing --resume could continue from, so the line offers --overwrite.
  expect_clean_failure(r, 78,
                       {dir + "/runs/x", "(best.pt)", "no last.pt", "--name", "--overwrite"});
  EXPECT_FALSE(contains(r.out, "--resume")) << show(r);
  EXPECT_EQ(list_dir(dir + "/runs/x"), std::vector<std::string>{"best.pt"});
  // --overwrite starts over.
  const Result over = train(
      dir, {"--data", dir, "--epochs", "1", "--name", "x", "--overwrite", "--batch-size", "5"});
  EXPECT_EQ(over.code, 0) << show(over);
  EXPECT_NE(read_file(dir + "/runs/x/best.pt"), "an earlier run's best");
}

TEST_F(TrainerBadInput, TruncatedIdxImagesExit65NamingTheFile) {
  const std::string dir = ws.path();
  write_synthetic_idx(dir, 10, 10);  // a valid set of 10 + 10 images, then the training pair cut
  // The header declares 100 images of 28x28 (and 100 labels); the file holds the bytes of 10.
  const std::string ten = read_file(dir + "/train-images-idx3-ubyte").substr(16);
  write_idx_images(dir + "/train-images-idx3-ubyte", 100, 28, 28, ten);
  write_idx_labels(dir + "/train-labels-idx1-ubyte", std::vector<std::uint8_t>(100, 3));

  const Result r = train(ws.path(), {"--data", dir, "--epochs", "1", "--name", "x"});
  expect_clean_failure(r, kBadData, {dir + "/train-images-idx3-ubyte", "truncated"});
}

TEST_F(TrainerBadInput, EmptyClassFolderExits65NamingIt) {
  const std::string root = ws / "images";
  fs::create_directories(root + "/cats");
  fs::create_directories(root + "/dogs");
  write_bmp(root + "/cats/1.bmp", 16, 16, [](int x, int) { return x < 8 ? 0xffffffu : 0u; });
  const Result r = train(ws.path(), {"--data", root, "--epochs", "1", "--name", "x"});
  expect_clean_failure(r, kBadData, {root + "/dogs", "without images"});
}

TEST_F(TrainerBadInput, UnknownModelExits64NamingIt) {
  write_synthetic_idx(ws.path(), 128, 16);
  const Result r = train(
      ws.path(), {"--data", ws.path(), "--model", "resnet19", "--epochs", "1", "--name", "x"});
  expect_clean_failure(r, kUsage, {"resnet19"});
}

TEST_F(TrainerBadInput, ZeroEpochsExits64) {
  const Result r = train(ws.path(), {"--epochs", "0", "--name", "x"});
  expect_clean_failure(r, kUsage, {"epochs", "'0'"});
  // Refused while reading the options: nothing was created.
  EXPECT_FALSE(file_exists(ws / "runs"));
}

TEST_F(TrainerBadInput, UnwritableRunDirectoryExits73NamingIt) {
  write_synthetic_idx(ws.path(), 128, 16);
  const Result r =
      train(ws.path(), {"--data", ws.path(), "--epochs", "1"}, {{"DL_RUN_DIR", "/proc/dl-test/x"}});
  expect_clean_failure(r, kCantWrite, {"/proc/dl-test/x"});
}

TEST_F(TrainerBadInput, LastPtAsAFifoIsRefusedWithoutWaiting) {
  // A FIFO planted as the run's last.pt: --resume once waited for a writer for ever.
  write_synthetic_idx(ws.path(), 128, 16);
  fs::create_directories(ws / "runs/x");
  ASSERT_EQ(mkfifo((ws / "runs/x/last.pt").c_str(), 0644), 0);
  const Result r =
      train(ws.path(), {"--data", ws.path(), "--epochs", "1", "--name", "x", "--resume"});
  expect_clean_failure(
      r, kBadData, {"--resume: cannot read ", "runs/x/last.pt (is a FIFO, not a regular file)"});
}

TEST_F(TrainerBadInput, DivergingLossStopsWithExit80) {
  // An absurd learning rate without clipping: the loss overflows within a few batches.
  write_synthetic_idx(ws.path(), 640, 64);
  const Result r = train(ws.path(), {"--data", ws.path(), "--epochs", "1", "--limit-batches", "5",
                                     "--lr", "100000", "--clip-norm", "0", "--name", "nan"});
  expect_clean_failure(r, kDiverged, {"loss became", "none yet"});
  // Stopped before writing a checkpoint of the diverged weights.
  EXPECT_FALSE(file_exists(ws / "runs/nan/last.pt"));
  EXPECT_FALSE(file_exists(ws / "runs/nan/metrics.csv"));
}

// --- e. undecodable images ---------------------------------------------------------------------

// An ImageFolder of 2 classes x 12 BMP images of 32x32 in train/ (and 2 x 2 in val/), plus one
// file with a .jpg name and no image in it. With batches of 5 the 25 training files are exactly 5
// batches, so the broken file is always read in the epoch.
class TrainerBadImages : public ::testing::Test {
 protected:
  void SetUp() override {
    // Decided by the build (dl::data exports DL_HAVE_OPENCV), never by what dl-train prints.
#if !DL_HAVE_OPENCV
    GTEST_SKIP() << "dl::data was built without OpenCV: image folders cannot be decoded";
#endif
    const std::string root = ws / "images";
    for (const char* dir : {"/train/bars", "/train/stripes", "/val/bars", "/val/stripes"}) {
      fs::create_directories(root + dir);
    }
    for (const char* split : {"train", "val"}) {
      const int count = std::string(split) == "train" ? 12 : 2;
      for (int i = 0; i < count; ++i) {
        const std::string name = "/" + std::to_string(i) + ".bmp";
        // Vertical bars and horizontal stripes, shifted per image.
        write_bmp(root + "/" + split + "/bars" + name, 32, 32,
                  [i](int x, int) { return (x + i) % 8 < 4 ? 0xf0f0f0u : 0x101010u; });
        write_bmp(root + "/" + split + "/stripes" + name, 32, 32,
                  [i](int, int y) { return (y + i) % 8 < 4 ? 0xe0c020u : 0x2040a0u; });
      }
    }
    std::string noise(2000, '\0');
    std::uint32_t state = 7;
    for (char& c : noise) {
      state = state * 1103515245u + 12345u;
      c = static_cast<char>(state >> 23);
    }
    write_file(root + "/train/bars/broken.jpg", noise);
  }

  Result train_images(const std::string& max_bad, const std::string& name) {
    return train(ws.path(),
                 {"--data", ws / "images", "--image-size", "32", "--model", "cnn", "--epochs", "1",
                  "--batch-size", "5", "--max-bad-fraction", max_bad, "--name", name});
  }

  TempDir ws;
};

TEST_F(TrainerBadImages, SkippedAndCountedWithinTheTolerance) {
  const Result r = train_images("0.2", "tolerant");
  ASSERT_EQ(r.code, 0) << show(r);
  const std::vector<std::string> warnings = log_lines(r.out, "warning");
  EXPECT_TRUE(std::any_of(warnings.begin(), warnings.end(), [](const std::string& l) {
    return contains(l, "1 sample(s) could not be decoded and were skipped this epoch (4.00%)");
  })) << show(r);
  EXPECT_TRUE(contains(read_file(ws / "runs/tolerant/train.log"),
                       "1 training sample(s) were skipped in all"));
  const Csv metrics = read_csv(ws / "runs/tolerant/metrics.csv");
  ASSERT_EQ(metrics.rows.size(), 1u);
  EXPECT_EQ(metrics.number(0, "skipped_samples"), 1.0);
}

TEST_F(TrainerBadImages, AboveTheToleranceExits65NamingTheData) {
  const Result r = train_images("0.01", "strict");
  EXPECT_EQ(r.code, kBadData) << show(r);
  const std::vector<std::string> errors = log_lines(r.out, "error");
  ASSERT_EQ(errors.size(), 1u) << show(r);
  EXPECT_TRUE(contains(errors[0], ws / "images")) << errors[0];
  EXPECT_TRUE(contains(errors[0], "1 of 25 samples could not be decoded")) << errors[0];
  EXPECT_FALSE(file_exists(ws / "runs/strict/last.pt"));
}

// A decompression bomb (a 32x32 BMP whose header claims 60000x60000: it would take 10 GiB) and a
// link loop (bars/loop -> .., the training root) next to the broken file: the bomb is refused from
// its header and reported by reason with the broken file, the loop is named once and not followed
// (the 25 files stay 25 samples: the bomb takes an image's place, so every sample is in one of the
// 5 batches), and the run ends well within the test's timeout.
TEST_F(TrainerBadImages, BombAndLinkLoopAreSkippedAndNamed) {
  fs::remove(ws / "images/train/stripes/11.bmp");
  const std::string bomb = ws / "images/train/stripes/bomb.bmp";
  write_bmp(bomb, 32, 32, [](int, int) { return 0x808080u; });
  std::string bytes = read_file(bomb);
  for (std::size_t at : {18u, 22u}) bytes.replace(at, 4, std::string("\x60\xea\0\0", 4));
  write_file(bomb, bytes);
  fs::create_directory_symlink("..", ws / "images/train/bars/loop");
  const Result r = train_images("0.2", "hostile");
  ASSERT_EQ(r.code, 0) << show(r);
  const std::vector<std::string> warnings = log_lines(r.out, "warning");
  EXPECT_EQ(std::count_if(warnings.begin(), warnings.end(),
                          [](const std::string& l) { return contains(l, "bars/loop"); }),
            1)
      << show(r);
  EXPECT_TRUE(std::any_of(warnings.begin(), warnings.end(), [&](const std::string& l) {
    return contains(l, "2 sample(s) could not be decoded and were skipped this epoch (8.00%)") &&
           contains(l, "1 not an image (" + ws / "images/train/bars/broken.jpg") &&
           contains(l, "1 too many pixels (" + bomb + ": 60000x60000 pixels");
  })) << show(r);
  EXPECT_TRUE(contains(read_file(ws / "runs/hostile/train.log"),
                       "2 training sample(s) were skipped in all: 1 not an image"));
}

// The pixel limit is a setting: at 1000 pixels every 32x32 image is refused, and the run stops
// naming the reason; an unusable value is refused like any other.
TEST_F(TrainerBadImages, PixelLimitIsASetting) {
  const Result r =
      train(ws.path(), {"--data", ws / "images", "--image-size", "32", "--epochs", "1",
                        "--batch-size", "5", "--max-image-pixels", "1000", "--name", "small"});
  EXPECT_EQ(r.code, kBadData) << show(r);
  const std::vector<std::string> errors = log_lines(r.out, "error");
  ASSERT_EQ(errors.size(), 1u) << show(r);
  EXPECT_TRUE(contains(errors[0], "25 of 25 samples could not be decoded")) << errors[0];
  EXPECT_TRUE(contains(errors[0], "1 not an image, 24 too many pixels")) << errors[0];
  const Result bad =
      train(ws.path(), {"--data", ws / "images", "--max-image-pixels", "0", "--name", "zero"});
  EXPECT_EQ(bad.code, kUsage) << show(bad);
  EXPECT_TRUE(contains(bad.out + bad.err, "max-image-pixels")) << show(bad);
}

// --- f. stop signal ----------------------------------------------------------------------------

TEST(TrainerStop, SigtermMidEpochSavesTheWeightsAndExits143) {
  const std::string data = mini_fashion();
  if (data.empty()) GTEST_SKIP() << kNoFashion;
  TempDir ws;
  // 64 batches an epoch, 5 epochs: the signal arrives long before the run could end by itself.
  Process p(in_directory(ws.path(), train_argv({"--data", data, "--epochs", "5", "--log-every",
                                                "20", "--name", "stop"})));
  // The progress line of batch 20 ("epoch 1/5 batch 20/64 loss ..."): training is under way.
  ASSERT_TRUE(wait_for_output(p, " batch 20/", kRunTimeout)) << p.out();
  p.send_signal(SIGTERM);
  const Result r = p.wait(kRunTimeout);
  EXPECT_EQ(r.code, 128 + SIGTERM) << show(r);
  EXPECT_EQ(r.signal, 0) << "killed by the signal instead of saving and exiting: " << show(r);

  const std::string last = ws / "runs/stop/last.pt";
  ASSERT_TRUE(file_exists(last)) << show(r);
  const dl::model::CheckpointData c = dl::model::load_checkpoint(last);
  // Saved as "no epoch completed" with the position inside epoch 1, where --resume goes on.
  EXPECT_EQ(c.epoch, 0);
  EXPECT_EQ(extra_int(c, "interrupted_in_epoch"), 1);
  const std::int64_t after = extra_int(c, "interrupted_after_batches");
  EXPECT_GE(after, 20);
  EXPECT_LT(after, 64) << "the epoch ran to its end instead of stopping at the signal";
  EXPECT_EQ(extra_int(c, "global_step"), after);
  EXPECT_EQ(extra_int(c, "position_epoch"), 0);
  EXPECT_EQ(extra_int(c, "position_batches"), after);
  EXPECT_TRUE(contains(r.out, "received in epoch 1 after " + std::to_string(after) +
                                  " of 64 batches (step " + std::to_string(after) + "): saved"))
      << show(r);

  // Typed again without --resume: refused, the checkpoint kept.
  const std::string saved = read_file(last);
  const Result again = train(ws.path(), {"--data", data, "--epochs", "5", "--name", "stop"});
  EXPECT_EQ(again.code, 78) << show(again);
  EXPECT_TRUE(contains(again.out, "already holds checkpoints (last.pt)")) << show(again);
  EXPECT_EQ(read_file(last), saved);
  // --resume (bare) says where it stopped, not "after epoch 0 (best val_acc 0.00%)", and goes on
  // at the next batch.
  const Result resumed =
      train(ws.path(), {"--data", data, "--epochs", "1", "--limit-batches",
                        std::to_string(after + 2), "--name", "stop", "--resume"});
  EXPECT_EQ(resumed.code, 0) << show(resumed);
  EXPECT_TRUE(contains(resumed.out, "inside epoch 1 at step " + std::to_string(after) +
                                        " (no validation yet): the epoch goes on at batch " +
                                        std::to_string(after + 1)))
      << show(resumed);
  EXPECT_EQ(extra_int(dl::model::load_checkpoint(last), "global_step"), after + 2);
}

// --- g. dl-launch ------------------------------------------------------------------------------

// The plan's data size and input bytes come from dl-train --data-facts for any data dl-train
// reads: an IDX folder, shards packed from it, given as a relative path from another directory;
// data dl-train refuses stops the start with dl-train's line and code; a dry run shows the plan
// with the line among its warnings, and exits with that code too.
TEST(LauncherStartsTrainer, ThePlanKnowsTheSizeOfAnyDataDlTrainReads) {
  TempDir dir;
  fs::create_directories(dir / "ws");
  write_synthetic_idx(dir / "idx", 300, 40);
  const auto planned = [&](const std::string& data, const std::string& field, int code = 0) {
    Process p({kLaunch, "--workspace", "ws", "--dry-run", "--json", "--data", data,
               "--nvml-library", "/nonexistent"},
              {}, kSchedulerVars, dir.path());
    const Result r = p.wait(kRunTimeout);
    EXPECT_EQ(r.code, code) << show(r);
    if (code != 0) {
      EXPECT_TRUE(contains(r.err, "dl-launch error: ")) << show(r);
      EXPECT_TRUE(contains(r.err, data)) << show(r);
    }
    std::smatch m;
    const std::regex value("\"" + field + "\": ([0-9]+)");
    return std::regex_search(r.out, m, value) ? std::stol(m[1].str()) : -1L;
  };
  EXPECT_EQ(planned("idx", "samples"), 300);
  EXPECT_EQ(planned("idx", "sample_bytes"), 28 * 28 * 4);

  Process pack({kTrain, "pack", "--data", "idx", "--out", "shards", "--shard-size", "40kB"}, {}, {},
               dir.path());
  ASSERT_EQ(pack.wait(kRunTimeout).code, 0);
  // What dl-train itself says of the shards: the plan takes its training part.
  Process facts({kTrain, "--data-facts", "--data", "shards"}, {}, {}, dir.path());
  const Result f = facts.wait(kRunTimeout);
  ASSERT_EQ(f.code, 0) << show(f);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      f.out, m, std::regex(R"("train_samples":(\d+),"val_samples":(\d+).*"shards":(\d+))")))
      << f.out;
  EXPECT_EQ(std::stol(m[1].str()) + std::stol(m[2].str()), 300) << f.out;
  EXPECT_GT(std::stol(m[3].str()), 2) << f.out;
  EXPECT_EQ(planned("shards", "samples"), std::stol(m[1].str()));
  EXPECT_EQ(planned("shards", "sample_bytes"), 3 * 224 * 224 * 4);

  // A folder dl-train cannot read: one line from dl-train, its code; a dry run shows the plan.
  fs::create_directories(dir / "empty");
  Process refused(
      {kLaunch, "--workspace", "ws", "--data", "empty", "--nvml-library", "/nonexistent"}, {},
      kSchedulerVars, dir.path());
  const Result r = refused.wait(kRunTimeout);
  EXPECT_TRUE(r.code == kBadData || r.code == kMissing) << show(r);
  EXPECT_TRUE(contains(r.err, "empty")) << show(r);
  EXPECT_FALSE(contains(r.err, "terminate")) << show(r);
  EXPECT_FALSE(fs::exists(dir / "ws/runs")) << "a refused start wrote its run directory";
  EXPECT_EQ(planned("empty", "sample_bytes", r.code), 3 * 224 * 224 * 4);
}

TEST(LauncherStartsTrainer, DlTrainRunsWithThePlanInTheWorkspace) {
  if (fashion_mnist_dir().empty()) GTEST_SKIP() << kNoFashion;
  TempDir ws;
  // The workspace's own data/: what dl-train trains on when no --data is given.
  fs::create_directories(ws / "data");
  write_fashion_subset(ws / "data", 2048, 500);
  // No --trainer and no command: dl-launch finds dl-train beside itself in the build tree
  // (launcher/../trainer/dl-train). NVML is absent, so the plan is for this machine's CPUs.
  Process p({kLaunch, "--workspace", ws.path(), "--name", "L", "--epochs", "1", "--limit-batches",
             "30", "--monitor-every", "0", "--nvml-library", "/nonexistent"},
            {}, kSchedulerVars);
  const Result r = p.wait(kRunTimeout);
  ASSERT_EQ(r.code, 0) << show(r);

  const std::string run = ws / "runs/L";
  ASSERT_TRUE(file_exists(run + "/plan.json")) << show(r);
  EXPECT_TRUE(file_exists(run + "/last.pt"));
  const Csv metrics = read_csv(run + "/metrics.csv");
  EXPECT_EQ(metrics.rows.size(), 1u) << show(r);

  // Workers and threads were not given: the plan leaves them to dl-train's measurement, which
  // logs what it measured and chose, and the loop then runs with that choice.
  const std::string plan = read_file(run + "/plan.json");
  EXPECT_TRUE(contains(plan, "\"workers_measured\": true")) << plan;
  EXPECT_TRUE(contains(plan, "\"threads_measured\": true")) << plan;
  // The workspace's data/ is not the default Fashion-MNIST: its size is dl-train's word.
  EXPECT_TRUE(contains(plan, "\"samples\": 2048")) << plan;
  EXPECT_TRUE(contains(plan, "dl-train --data-facts: idx")) << plan;
  const std::string log = read_file(run + "/train.log");
  const std::regex chose(
      R"(pipeline: loading .* on \d+ core\(s\) -> (\d+) worker\(s\), (\d+) thread)");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(log, m, chose)) << log;
  EXPECT_TRUE(contains(log, "on cpu, " + m[2].str() + " threads, " + m[1].str() + " workers"))
      << log;
  // The workspace is the trainer's working directory: it found data/ there.
  EXPECT_TRUE(contains(log, "data: data (2048 training, 500 validation samples")) << log;
}

// --- h. TensorBoard ----------------------------------------------------------------------------

// Every record of the run's events file, as tests/helpers/tfevents_decode.py reads it: the CRCs
// checked with python3-crcmod, the payloads decoded by protoc --decode_raw (tools that are not
// dl-train's; TensorBoard itself is not in Debian).
TEST(TrainerTensorBoard, EventsFileDecodesWithEveryLogPointAndEpoch) {
  const std::string data = mini_fashion();
  if (data.empty()) GTEST_SKIP() << kNoFashion;
  TempDir ws;
  // train_argv's settings but the monitor's, which reports every 0.05 s here.
  Process p(in_directory(ws.path(), {kTrain, "--threads", "1", "--workers", "1", "--monitor-every",
                                     "0.05", "--data", data, "--epochs", "2", "--limit-batches",
                                     "4", "--log-every", "2", "--name", "tb"}));
  const Result r = p.wait(kRunTimeout);
  ASSERT_EQ(r.code, 0) << show(r);
  std::vector<std::string> events;
  for (const auto& entry : fs::directory_iterator(ws / "runs/tb")) {
    const std::string name = entry.path().filename();
    if (name.rfind("events.out.tfevents.", 0) == 0) events.push_back(entry.path());
  }
  ASSERT_EQ(events.size(), 1u) << "one events file expected in runs/tb";
  const Result decoded = run({dl::test::kTfeventsDecode, events[0]});
  if (decoded.code == 77) GTEST_SKIP() << decoded.err;
  ASSERT_EQ(decoded.code, 0) << show(decoded);
  const std::string& out = decoded.out;
  EXPECT_TRUE(contains(out, "3: \"brain.Event:2\"")) << out;
  // Log points at batches 2 and 4 of both epochs (steps 2, 4, 6, 8), an epoch's end at 4 and 8.
  const auto count = [&](const std::string& needle) {
    std::size_t n = 0;
    for (auto at = out.find(needle); at != std::string::npos; at = out.find(needle, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("\"train/loss\""), 4u) << out;
  EXPECT_EQ(count("\"train/samples_per_s\""), 4u) << out;
  EXPECT_EQ(count("\"val/acc\""), 2u) << out;
  EXPECT_EQ(count("\"epoch/seconds\""), 2u) << out;
  EXPECT_TRUE(contains(out, "2: 8\n")) << out;  // the last step
  // The monitor's figures (every 0.05 s over a run of more than a second).
  EXPECT_GE(count("\"monitor/ram_percent\""), 1u) << out;
}

// --- i. crashes and concurrent runs ------------------------------------------------------------

TEST(TrainerCrash, TrainLogHoldsEveryLineLoggedBeforeAKill9) {
  const std::string data = mini_fashion();
  if (data.empty()) GTEST_SKIP() << kNoFashion;
  TempDir ws;
  Process p(in_directory(ws.path(), train_argv({"--data", data, "--epochs", "5", "--log-every",
                                                "20", "--name", "crash"})));
  ASSERT_TRUE(wait_for_output(p, " batch 20/", kRunTimeout)) << p.out();
  p.send_signal(SIGKILL);
  const Result r = p.wait(kRunTimeout);
  ASSERT_EQ(r.signal, SIGKILL) << show(r);
  // Each line reached the file when it was logged: the last one before the kill is there.
  const std::string log = read_file(ws / "runs/crash/train.log");
  EXPECT_TRUE(contains(log, "model cnn")) << log;
  EXPECT_TRUE(contains(log, " batch 20/")) << log;
}

TEST(TrainerConcurrency, ASecondRunWithTheSameNameIsRefusedNamingTheFirst) {
  const std::string data = mini_fashion();
  if (data.empty()) GTEST_SKIP() << kNoFashion;
  TempDir ws;
  Process first(in_directory(ws.path(), train_argv({"--data", data, "--epochs", "5", "--log-every",
                                                    "20", "--name", "same"})));
  ASSERT_TRUE(wait_for_output(first, " batch 20/", kRunTimeout)) << first.out();
  // --overwrite: the first run may have saved its first epoch's checkpoints already (a fast
  // build finishes the mini set's epoch soon after batch 20), and a live run is refused even so.
  const Result second =
      train(ws.path(), {"--data", data, "--epochs", "1", "--name", "same", "--overwrite"});
  EXPECT_EQ(second.code, 74) << show(second);
  EXPECT_TRUE(contains(second.out + second.err,
                       "runs/same is in use by PID " + std::to_string(first.pid())))
      << show(second);
  // The lock dies with its holder, kill -9 included: the name is free again at once.
  first.send_signal(SIGKILL);
  first.wait(kRunTimeout);
  const Result third = train(ws.path(), {"--data", data, "--epochs", "1", "--limit-batches", "2",
                                         "--name", "same", "--overwrite"});
  EXPECT_EQ(third.code, 0) << show(third);
}

TEST(LauncherStartsTrainer, BadTrainingSettingsWriteNothing) {
  TempDir ws;
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"--epochs", "abc"}, {"--lr", "-1"}, {"--model", "nosuch"}}) {
    std::vector<std::string> argv = {kLaunch, "--workspace",    ws.path(),     "--name",
                                     "bad",   "--nvml-library", "/nonexistent"};
    argv.insert(argv.end(), bad.begin(), bad.end());
    const Result r = run(argv, {}, kSchedulerVars);
    EXPECT_EQ(r.code, kUsage) << show(r);
    EXPECT_TRUE(contains(r.err, bad[0] + ": expected")) << show(r);
    EXPECT_FALSE(contains(r.out, "plan")) << "the plan was shown: " << show(r);
    EXPECT_TRUE(list_dir(ws.path()).empty()) << bad[0] << " left files in the workspace";
  }
}

}  // namespace
}  // namespace dl::test
