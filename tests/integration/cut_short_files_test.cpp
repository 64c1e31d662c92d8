// Files cut short in an ImageFolder, of every format an ImageFolder lists (JPEG baseline and
// progressive, PNG, BMP, WebP), each cut just after its header, in the middle and in its last
// bytes, plus a JPEG with garbage in its scan: dl-train skips them all, counts the cut ones as
// "cut short" in its bad-files line and train.log, and `dl-train predict` gives each its row with
// the reason, never a class. Every file is written here (OpenCV; the good ones are BMPs).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/text.h"
#include "support/build_paths.h"
#include "support/data_sets.h"
#include "support/files.h"
#include "support/matchers.h"
#include "support/process.h"
#include "support/temp_dir.h"
#include "unit/data/cut_points.h"

#if DL_HAVE_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#endif

namespace dl::test {
namespace {

namespace fs = std::filesystem;

#if DL_HAVE_OPENCV

const std::string kTrain = dl::test::kTrainBin;
constexpr int kSomeUnreadable = 79;

// Smooth colours plus noise: enough entropy-coded data that a cut lands inside it.
cv::Mat picture() {
  cv::Mat m(96, 128, CV_8UC3);
  unsigned state = 11;
  for (int y = 0; y < m.rows; ++y) {
    for (int x = 0; x < m.cols; ++x) {
      for (int c = 0; c < 3; ++c) {
        state = state * 1103515245u + 12345u;
        m.at<cv::Vec3b>(y, x)[c] = static_cast<std::uint8_t>(x * (c + 1) + y + (state >> 27));
      }
    }
  }
  return m;
}

struct Format {
  std::string name;  // in file names
  std::string ext;
  std::vector<int> params;
};

const std::vector<Format> kFormats = {
    {"baseline", ".jpg", {cv::IMWRITE_JPEG_QUALITY, 90}},
    {"progressive", ".jpg", {cv::IMWRITE_JPEG_PROGRESSIVE, 1}},
    {"png", ".png", {}},
    {"bmp", ".bmp", {}},
    {"webp", ".webp", {cv::IMWRITE_WEBP_QUALITY, 90}},
};

Result run_train(const std::string& ws, std::vector<std::string> args) {
  args.insert(args.begin(), kTrain);
  for (const char* a : {"--threads", "1", "--workers", "1"}) args.emplace_back(a);
  Process p(in_directory(ws, args));
  return p.wait(std::chrono::seconds(300));
}

// predict's CSV by file name: the last column, error (no cell holds a comma here; an empty last
// cell may have no element of its own).
std::map<std::string, std::string> predict_errors(const std::string& csv) {
  std::map<std::string, std::string> out;
  const std::vector<std::string> lines = split(csv, '\n');
  if (lines.empty()) return out;
  const std::size_t columns = split(lines[0], ',').size();
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const std::vector<std::string> v = split(lines[i], ',');
    if (v.empty() || v[0].empty()) continue;
    out[fs::path(v[0]).filename().string()] = v.size() == columns ? v.back() : "";
  }
  return out;
}

TEST(CutShortFiles, DlTrainAndPredictSkipEveryFormatCutAnywhereAsCutShort) {
  TempDir ws;
  const std::string root = ws / "images";
  const std::string cuts = ws / "cuts";
  for (const char* dir : {"/train/bars", "/train/stripes", "/val/bars", "/val/stripes"}) {
    fs::create_directories(root + dir);
  }
  fs::create_directories(cuts);
  for (const char* split_name : {"train", "val"}) {
    // 23 good training files and the 22 bad ones: 45, whole batches of 5, so every file is read.
    const int count = std::string(split_name) == "train" ? 12 : 2;
    for (int i = 0; i < count; ++i) {
      const std::string name = "/" + std::to_string(i) + ".bmp";
      if (std::string(split_name) != "train" || i < 11) {  // no train/bars/11.bmp
        write_bmp(root + "/" + split_name + "/bars" + name, 32, 32,
                  [i](int x, int) { return (x + i) % 8 < 4 ? 0xf0f0f0u : 0x101010u; });
      }
      write_bmp(root + "/" + split_name + "/stripes" + name, 32, 32,
                [i](int, int y) { return (y + i) % 8 < 4 ? 0xe0c020u : 0x2040a0u; });
    }
  }
  // Each cut file in the training set and in the folder predict reads; a whole one of each
  // format beside them in the latter (they decode: a test that can tell).
  std::vector<std::string> names;
  for (const Format& f : kFormats) {
    Bytes whole;
    ASSERT_TRUE(cv::imencode(f.ext, picture(), whole, f.params)) << f.name;
    write_bytes(cuts + "/whole-" + f.name + f.ext, whole);
    for (const CutPoint& p : cut_points(whole)) {
      const std::string name = "cut-" + f.name + "-" + p.where + f.ext;
      write_bytes(root + "/train/bars/" + name, cut(whole, p.at));
      write_bytes(cuts + "/" + name, cut(whole, p.at));
      names.push_back(name);
    }
    if (f.ext == ".jpg") {
      const std::string name = "garbage-" + f.name + f.ext;
      write_bytes(root + "/train/stripes/" + name, with_garbage(whole));
      write_bytes(cuts + "/" + name, with_garbage(whole));
    }
  }
  const std::string cut_count = std::to_string(names.size());

  // Training: the bad-files line counts them by reason and names a few.
  const Result r = run_train(ws.path(), {"--data", root, "--image-size", "32", "--model", "cnn",
                                         "--epochs", "1", "--batch-size", "5", "--max-bad-fraction",
                                         "0.5", "--monitor-every", "0", "--name", "cut"});
  ASSERT_EQ(r.code, 0) << show(r);
  const std::vector<std::string> warnings = log_lines(r.out, "warning");
  std::string line;
  for (const std::string& w : warnings) {
    if (contains(w, "could not be decoded and were skipped this epoch")) line = w;
  }
  ASSERT_FALSE(line.empty()) << show(r);
  std::printf("dl-train: %s\n", line.c_str());
  const std::string bad_total = std::to_string(names.size() + 2);
  EXPECT_TRUE(contains(line, bad_total + " sample(s) could not be decoded")) << line;
  EXPECT_TRUE(contains(line, cut_count + " cut short (" + root + "/train/bars/cut-")) << line;
  EXPECT_TRUE(contains(line, "data end at byte")) << line;
  EXPECT_TRUE(contains(line, "2 undecodable (" + root + "/train/stripes/garbage-")) << line;
  EXPECT_TRUE(contains(line, "Corrupt JPEG data")) << line;
  EXPECT_TRUE(contains(read_file(ws / "runs/cut/train.log"),
                       bad_total + " training sample(s) were skipped in all: 2 undecodable"))
      << read_file(ws / "runs/cut/train.log");

  // Prediction, one row per file: every cut one "cut short", the whole ones a class.
  const std::string csv = ws / "pred.csv";
  const Result p = run_train(
      ws.path(), {"predict", "--checkpoint", ws / "runs/cut/last.pt", "--out", csv, cuts});
  ASSERT_EQ(p.code, kSomeUnreadable) << show(p);
  const std::map<std::string, std::string> errors = predict_errors(read_file(csv));
  ASSERT_EQ(errors.size(), names.size() + 2 + kFormats.size()) << read_file(csv);
  for (const std::string& name : names) {
    ASSERT_EQ(errors.count(name), 1u) << name;
    EXPECT_EQ(errors.at(name).rfind("cut short: ", 0), 0u) << name << ": " << errors.at(name);
    std::printf("predict: %s: %s\n", name.c_str(), errors.at(name).c_str());
  }
  for (const Format& f : kFormats) {
    EXPECT_EQ(errors.at("whole-" + f.name + f.ext), "") << f.name;
  }
  for (const char* name : {"garbage-baseline.jpg", "garbage-progressive.jpg"}) {
    EXPECT_EQ(errors.at(name).rfind("undecodable: Corrupt JPEG data", 0), 0u) << errors.at(name);
  }
}

#endif  // DL_HAVE_OPENCV

}  // namespace
}  // namespace dl::test
