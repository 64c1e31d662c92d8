// End-to-end tests of `dl-train evaluate` and `dl-train predict` (and of dl-launch starting them):
// a short training run on a Fashion-MNIST subset, then its checkpoint evaluated on the test split
// (the printed and written numbers agree with the confusion matrix) and run over a folder of PNG
// and JPEG files made from Fashion-MNIST samples with one corrupt file among them (exit 79, that
// file's row names the reason, the others are predicted). Bad input ends with its code and one
// line and writes nothing; Python's torch.load reads the checkpoint with its class names.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "core/json.h"
#include "model/checkpoint.h"
#include "support/build_paths.h"
#include "support/data_sets.h"
#include "support/files.h"
#include "support/matchers.h"
#include "support/process.h"
#include "support/python.h"
#include "support/temp_dir.h"

#if DL_HAVE_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#endif

namespace dl::test {
namespace {

namespace fs = std::filesystem;

const std::string kTrain = dl::test::kTrainBin;
const std::string kLaunch = dl::test::kLaunchBin;
constexpr int kUsage = 64;
constexpr int kBadData = 65;
constexpr int kMissing = 66;
constexpr int kMismatch = 76;
constexpr int kSomeUnreadable = 79;
constexpr std::chrono::seconds kTimeout{300};

const std::vector<std::string> kFashionNames = {"T-shirt/top", "Trouser",   "Pullover", "Dress",
                                                "Coat",        "Sandal",    "Shirt",    "Sneaker",
                                                "Bag",         "Ankle boot"};

// Settings that keep runs short on a small machine.
const std::vector<std::string> kQuick = {"--threads", "1", "--workers", "1"};

Result run_in(const std::string& dir, std::vector<std::string> argv) {
  argv.insert(argv.end(), kQuick.begin(), kQuick.end());  // after a subcommand
  Process p(in_directory(dir, argv));
  return p.wait(kTimeout);
}

// One trained run shared by the tests of this process: 2048 training and 1000 test samples of
// Fashion-MNIST in a folder named fashion-mnist (so its classes have Fashion-MNIST's names), 30
// batches of training. "" when Fashion-MNIST is not installed.
struct TrainedRun {
  std::unique_ptr<TempDir> ws;
  std::string data, checkpoint, log;
  int code = -1;
};

const TrainedRun& trained() {
  static const TrainedRun run = [] {
    TrainedRun t;
    if (fashion_mnist_dir().empty()) return t;
    t.ws = std::make_unique<TempDir>();
    t.data = *t.ws / "fashion-mnist";
    fs::create_directories(t.data);
    write_fashion_subset(t.data, 2048, 1000);
    const Result r =
        run_in(t.ws->path(), {kTrain, "--data", t.data, "--epochs", "1", "--limit-batches", "30",
                              "--monitor-every", "0", "--name", "T"});
    t.code = r.code;
    t.log = show(r);
    t.checkpoint = *t.ws / "runs/T/best.pt";
    return t;
  }();
  return run;
}

#define REQUIRE_TRAINED()                                      \
  if (fashion_mnist_dir().empty()) GTEST_SKIP() << kNoFashion; \
  const TrainedRun& t = trained();                             \
  ASSERT_EQ(t.code, 0) << t.log

// The cells of a CSV line (no quoted commas in what these tests read).
std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  for (char c : line) {
    if (c == ',') {
      out.push_back(cell);
      cell.clear();
    } else {
      cell += c;
    }
  }
  out.push_back(cell);
  return out;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::string line;
  for (char c : text) {
    if (c == '\n') {
      out.push_back(line);
      line.clear();
    } else {
      line += c;
    }
  }
  if (!line.empty()) out.push_back(line);
  return out;
}

TEST(TrainRecordsClasses, CheckpointAndValidationConfusion) {
  REQUIRE_TRAINED();
  const model::CheckpointData c = model::load_checkpoint(t.checkpoint);
  EXPECT_EQ(c.classes, kFashionNames);
  ASSERT_TRUE(c.model_info.has_value());
  EXPECT_EQ(c.model_info->name, "cnn");
  EXPECT_EQ(c.model_info->in_channels, 1);
  EXPECT_EQ(c.model_info->image_size, 28);
  EXPECT_EQ(c.model_info->num_classes, 10);
  EXPECT_EQ(c.model_info->data_kind, "idx");
  ASSERT_EQ(c.model_info->mean.size(), 1u);
  // Validation's confusion matrix: every one of the 1000 test samples once, its trace the
  // validation accuracy the checkpoint records.
  const std::vector<std::string> rows = lines_of(read_file(*t.ws / "runs/T/confusion.csv"));
  ASSERT_EQ(rows.size(), 11u);
  EXPECT_EQ(rows[0],
            "true\\predicted,T-shirt/top,Trouser,Pullover,Dress,Coat,Sandal,Shirt,"
            "Sneaker,Bag,Ankle boot");
  long total = 0, trace = 0;
  for (std::size_t r = 1; r < rows.size(); ++r) {
    const auto v = cells(rows[r]);
    ASSERT_EQ(v.size(), 11u) << rows[r];
    EXPECT_EQ(v[0], kFashionNames[r - 1]);
    for (std::size_t k = 1; k < v.size(); ++k) {
      total += std::stol(v[k]);
      if (k == r) trace += std::stol(v[k]);
    }
  }
  EXPECT_EQ(total, 1000);
  EXPECT_NEAR(static_cast<double>(trace) / 1000.0, c.val_acc, 1e-9);
}

TEST(Evaluate, NumbersAgreeWithTheConfusionMatrix) {
  REQUIRE_TRAINED();
  const Result r = run_in(t.ws->path(), {kTrain, "evaluate", "--checkpoint", t.checkpoint, "--data",
                                         t.data, "--batch-size", "128"});
  ASSERT_EQ(r.code, 0) << show(r);
  const std::string out = *t.ws / "runs/T/eval-test";
  const std::vector<std::string> rows = lines_of(read_file(out + "/confusion.csv"));
  ASSERT_EQ(rows.size(), 11u);
  long total = 0, trace = 0;
  std::vector<long> row_totals;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    const auto v = cells(rows[i]);
    long row = 0;
    for (std::size_t k = 1; k < v.size(); ++k) {
      row += std::stol(v[k]);
      if (k == i) trace += std::stol(v[k]);
    }
    row_totals.push_back(row);
    total += row;
  }
  EXPECT_EQ(total, 1000);
  const auto summary = parse_json(read_file(out + "/summary.json"));
  ASSERT_TRUE(summary.has_value());
  EXPECT_EQ(summary->get_string("split", ""), "test");
  EXPECT_EQ(summary->get_i64("samples", 0), 1000);
  EXPECT_EQ(summary->get_i64("correct", -1), trace);
  EXPECT_DOUBLE_EQ(summary->get_double("top1", -1), static_cast<double>(trace) / 1000.0);
  const double top5 = summary->get_double("top5", -1);
  EXPECT_GE(top5, summary->get_double("top1", 2));
  EXPECT_LE(top5, 1.0);
  // The same checkpoint and data as validation: the same accuracy.
  EXPECT_NEAR(summary->get_double("top1", -1), model::load_checkpoint(t.checkpoint).val_acc, 1e-9);
  // per_class.csv: one row per class, its samples the confusion row's total.
  const std::vector<std::string> per_class = lines_of(read_file(out + "/per_class.csv"));
  ASSERT_EQ(per_class.size(), 11u);
  EXPECT_EQ(per_class[0], "class,name,samples,correct,accuracy");
  for (std::size_t k = 0; k < 10; ++k) {
    const auto v = cells(per_class[k + 1]);
    EXPECT_EQ(v[1], kFashionNames[k]);
    EXPECT_EQ(std::stol(v[2]), row_totals[k]);
  }
  // What it prints: top-1 as trace/total, top-5, one line per class.
  EXPECT_TRUE(contains(r.out, "(" + std::to_string(trace) + "/1000)")) << r.out;
  EXPECT_TRUE(contains(r.out, "top-5 ")) << r.out;
  EXPECT_TRUE(contains(r.out, "Ankle boot")) << r.out;
}

#if DL_HAVE_OPENCV
// Test images of Fashion-MNIST as PNG and JPEG (grey and colour), one corrupt .png, one
// subfolder; returns the folder.
std::string write_image_folder(const std::string& dir, const std::string& data) {
  const std::string pixels =
      gunzip_prefix(fashion_mnist_dir() + "/t10k-images-idx3-ubyte.gz", 16 + 6 * 784).substr(16);
  (void)data;
  fs::create_directories(dir + "/sub");
  for (int i = 0; i < 6; ++i) {
    cv::Mat grey(28, 28, CV_8UC1,
                 const_cast<char*>(pixels.data() + static_cast<std::size_t>(i) * 784));
    cv::Mat image = grey.clone();
    if (i % 2 == 1) cv::cvtColor(grey, image, cv::COLOR_GRAY2BGR);
    const std::string name =
        dir + (i >= 4 ? "/sub/" : "/") + "img" + std::to_string(i) + (i % 3 == 0 ? ".jpg" : ".png");
    EXPECT_TRUE(cv::imwrite(name, image)) << name;
  }
  write_file(dir + "/broken.png", "\x89PNG\r\n\x1a\n not really a png");
  write_file(dir + "/notes.txt", "not an image: not listed");
  return dir;
}

TEST(Predict, FolderWithACorruptFileGivesRowsAnd79) {
  REQUIRE_TRAINED();
  const std::string folder = write_image_folder(*t.ws / "images", t.data);
  const std::string csv = *t.ws / "pred.csv";
  const Result r = run_in(t.ws->path(), {kTrain, "predict", "--checkpoint", t.checkpoint, "--top-k",
                                         "3", "--out", csv, folder});
  ASSERT_EQ(r.code, kSomeUnreadable) << show(r);
  EXPECT_TRUE(contains(r.err, "1 of 7 file(s) could not be decoded")) << show(r);
  const std::vector<std::string> rows = lines_of(read_file(csv));
  ASSERT_EQ(rows.size(), 8u) << read_file(csv);
  EXPECT_EQ(rows[0], "path,class_1,prob_1,class_2,prob_2,class_3,prob_3,error");
  int predicted = 0;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    const auto v = cells(rows[i]);
    ASSERT_EQ(v.size(), 8u) << rows[i];
    if (contains(v[0], "broken.png")) {
      EXPECT_EQ(v[1], "");
      EXPECT_TRUE(contains(v[7], "undecodable")) << rows[i];
      continue;
    }
    ++predicted;
    EXPECT_EQ(v[7], "") << rows[i];
    EXPECT_NE(std::find(kFashionNames.begin(), kFashionNames.end(), v[1]), kFashionNames.end());
    const double p1 = std::stod(v[2]), p2 = std::stod(v[4]), p3 = std::stod(v[6]);
    EXPECT_GE(p1, p2);
    EXPECT_GE(p2, p3);
    EXPECT_LE(p1 + p2 + p3, 1.0 + 1e-5);
    EXPECT_GT(p1, 0.0);
  }
  EXPECT_EQ(predicted, 6);
  EXPECT_TRUE(contains(read_file(csv), "sub/img4")) << "the subfolder was not searched";
}

TEST(Predict, AllDecodedIsExitZeroAndCsvOnStdout) {
  REQUIRE_TRAINED();
  const std::string folder = write_image_folder(*t.ws / "images-ok", t.data);
  fs::remove(folder + "/broken.png");
  const Result r = run_in(t.ws->path(), {kTrain, "predict", "--checkpoint", t.checkpoint,
                                         folder + "/img0.jpg", folder + "/sub"});
  ASSERT_EQ(r.code, 0) << show(r);
  const std::vector<std::string> rows = lines_of(r.out);
  ASSERT_EQ(rows.size(), 4u) << r.out;    // header, img0.jpg, sub/img4.jpg, sub/img5.png
  EXPECT_EQ(cells(rows[0]).size(), 12u);  // path, 5 x (class, prob), error
}
#endif

TEST(EvaluateBadInput, OneLineACodeAndNothingWritten) {
  REQUIRE_TRAINED();
  const std::string ws = t.ws->path();
  // The same images under a folder whose name does not say fashion-mnist: digit names.
  const std::string digits = ws + "/digits";
  if (!fs::exists(digits)) fs::copy(t.data, digits);
  write_file(ws + "/not-a-checkpoint.pt", "hello");
  struct Case {
    std::vector<std::string> args;
    int code;
    std::vector<std::string> says;
  };
  const std::vector<Case> cases = {
      {{"--checkpoint", ws + "/nope.pt", "--data", t.data}, kMissing, {"nope.pt"}},
      {{"--checkpoint", ws + "/not-a-checkpoint.pt", "--data", t.data},
       kBadData,
       {"not-a-checkpoint.pt", "not a readable checkpoint"}},
      {{"--checkpoint", t.checkpoint, "--data", digits},
       kMismatch,
       {"digits", "T-shirt/top", "0, 1, 2"}},
      {{"--checkpoint", t.checkpoint, "--data", t.data, "--model", "resnet18"},
       kMismatch,
       {"holds a cnn model, not the --model resnet18"}},
      {{"--checkpoint", t.checkpoint, "--data", t.data, "--split", "nope"}, kUsage, {"--split"}},
  };
  for (const Case& c : cases) {
    std::vector<std::string> argv = {kTrain, "evaluate"};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    argv.insert(argv.end(), {"--out", ws + "/bad-out"});
    const Result r = run_in(ws, argv);
    EXPECT_EQ(r.code, c.code) << show(r);
    const auto errors = log_lines(r.out + r.err, "error");
    EXPECT_EQ(errors.size(), 1u) << show(r);
    for (const std::string& s : c.says) EXPECT_TRUE(contains(r.out + r.err, s)) << s << show(r);
    EXPECT_FALSE(contains(r.out + r.err, "terminate")) << show(r);
    EXPECT_FALSE(fs::exists(ws + "/bad-out")) << "written despite the error: " << show(r);
  }
  // predict: a missing path, and a missing checkpoint.
  Result r = run_in(ws, {kTrain, "predict", "--checkpoint", t.checkpoint, "--out", ws + "/bad.csv",
                         ws + "/no-such-folder"});
  EXPECT_EQ(r.code, kMissing) << show(r);
  EXPECT_TRUE(contains(r.err, "no-such-folder")) << show(r);
  r = run_in(
      ws, {kTrain, "predict", "--checkpoint", ws + "/nope.pt", "--out", ws + "/bad.csv", t.data});
  EXPECT_EQ(r.code, kMissing) << show(r);
  EXPECT_FALSE(fs::exists(ws + "/bad.csv"));
}

TEST(LauncherStartsEvaluate, PlannedEvaluateInTheWorkspace) {
  REQUIRE_TRAINED();
  // Typed from the workspace's parent, with paths relative to it as a user types them: they are
  // the caller's, though dl-train runs in the workspace.
  const fs::path ws = t.ws->path();
  const std::string rel = ws.filename().string();
  Process p(
      {kLaunch, "evaluate", "--workspace", rel, "--name", "E", "--checkpoint",
       rel + "/runs/T/best.pt", "--data", rel + "/fashion-mnist", "--out", rel + "/eval-launched",
       "--nvml-library", "/nonexistent", "--threads", "1", "--workers", "1"},
      {}, kSchedulerVars, ws.parent_path().string());
  const Result r = p.wait(kTimeout);
  ASSERT_EQ(r.code, 0) << show(r);
  EXPECT_TRUE(file_exists(*t.ws / "runs/E/plan.json")) << show(r);
  EXPECT_TRUE(file_exists(*t.ws / "eval-launched/confusion.csv")) << show(r);
  EXPECT_TRUE(contains(r.out, "top-1 ")) << show(r);
  // One process, whatever the machine.
  const Result many =
      run({kLaunch, "evaluate", "--workspace", t.ws->path(), "--checkpoint", "runs/T/best.pt",
           "--nproc-per-node", "2", "--nvml-library", "/nonexistent"},
          {}, kSchedulerVars);
  EXPECT_EQ(many.code, kUsage) << show(many);
}

// Python's torch.load reads the checkpoint, class names included (labels "python").
TEST(CheckpointClassesPython, TorchLoadReadsClassesAndModelInfo) {
  if (!kPythonHasTorch) GTEST_SKIP() << kNoTorch;
  REQUIRE_TRAINED();
  const std::string script = *t.ws / "read_classes.py";
  write_file(script,
             "import sys, torch\n"
             "c = torch.load(sys.argv[1])\n"
             "assert isinstance(c, dict), type(c)\n"
             "print('classes=' + '|'.join(c['classes']))\n"
             "i = c['model_info']\n"
             "print('model=%s %d %d %d %s' % (i['name'], i['in_channels'], i['image_size'],\n"
             "      i['num_classes'], i['data_kind']))\n"
             "print('mean=%d' % len(i['mean']))\n"
             "print('state=%d' % len(c['model_state_dict']))\n");
  const Result r = run_python(script, {t.checkpoint});
  ASSERT_EQ(r.code, 0) << show(r);
  EXPECT_TRUE(contains(r.out,
                       "classes=T-shirt/top|Trouser|Pullover|Dress|Coat|Sandal|Shirt|Sneaker|"
                       "Bag|Ankle boot"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "model=cnn 1 28 10 idx")) << r.out;
  EXPECT_TRUE(contains(r.out, "mean=1")) << r.out;
}

}  // namespace
}  // namespace dl::test
