// `dl-launch doctor` as a user runs it, with the real dl-train: the figures it measures on data
// the test writes (photo-sized JPEGs, a folder of BMPs, Fashion-MNIST), the JSON form, the
// allreduce of --full between two real Gloo ranks, and bad input refused in one line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "core/json.h"
#include "support/build_paths.h"
#include "support/data_sets.h"
#include "support/files.h"
#include "support/matchers.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace dl::test {
namespace {

const std::string kLaunch = dl::test::kLaunchBin;
const std::string kMakeJpegSet = dl::test::kMakeJpegSet;  // "" without OpenCV
const std::string kFakeNvml = dl::test::kFakeNvml;
constexpr std::chrono::seconds kTimeout{300};

// dl-launch doctor with the fake NVML: the GPUs it sees are those FAKE_NVML_GPUS lists (none
// unless a test sets it), whichever machine runs the tests.
Result doctor(const TempDir& ws, std::vector<std::string> args, const EnvVars& env = {}) {
  args.insert(args.begin(), {kLaunch, "doctor", "--nvml-library", kFakeNvml});
  Process p(in_directory(ws.path(), args), env);
  return p.wait(kTimeout);
}

JsonValue doctor_json(const TempDir& ws, std::vector<std::string> args, const EnvVars& env = {}) {
  args.push_back("--json");
  const Result r = doctor(ws, args, env);
  EXPECT_EQ(r.code, 0) << show(r);
  std::string error;
  const auto json = parse_json(r.out, &error);
  EXPECT_TRUE(json) << error << "\n" << r.out;
  return json ? *json : JsonValue{};
}

TEST(LauncherDoctor, MeasuresTheDatasOwnJpegs) {
  if (kMakeJpegSet.empty()) GTEST_SKIP() << "no make_jpeg_set: this build has no OpenCV";
  TempDir ws;
  Process make({kMakeJpegSet, "--out", ws / "photos", "--per-class", "6", "--sides", "800-1000"});
  ASSERT_EQ(make.wait(kTimeout).code, 0);
  // The data relative to the workspace, as dl.conf would give it.
  write_file(ws / "dl.conf", "data = photos\n");
  const JsonValue d = doctor_json(ws, {});
  const JsonValue* decode = d.find("decode");
  ASSERT_NE(decode, nullptr);
  EXPECT_EQ(decode->get_string("source", ""), "the data's JPEGs");
  EXPECT_EQ(decode->get_i64("files", 0), 16);
  // 800-1000 px sides: 0.64 to 1 megapixel each.
  EXPECT_GE(decode->get_double("megapixels", 0), 0.6);
  EXPECT_LE(decode->get_double("megapixels", 0), 1.0);
  EXPECT_GT(decode->get_double("full_per_core", 0), 0);
  // At least a scale of 1/2 applies to 800 px for a 256 px resize: never slower than full size
  // by more than the noise of one sitting.
  EXPECT_GT(decode->get_double("scaled_per_core", 0), 0.8 * decode->get_double("full_per_core", 0));
  const JsonValue* read = d.find("read");
  ASSERT_NE(read, nullptr);
  // The training split of 60 files (10% held out), each read once per pass.
  std::uint64_t all = 0;
  for (const auto& f : std::filesystem::recursive_directory_iterator(ws / "photos")) {
    if (f.is_regular_file()) all += f.file_size();
  }
  EXPECT_GE(read->get_i64("files", 0), 50);
  EXPECT_LE(read->get_i64("files", 0), 60);
  EXPECT_GT(read->get_u64("bytes", 0), all / 2);
  EXPECT_LE(read->get_u64("bytes", 0), all);
  EXPECT_GT(read->get_double("second_mb_s", 0), 0);
  EXPECT_EQ(d.find("copy")->get_string("note", ""), "no CUDA device");
  EXPECT_EQ(d.get_string("mode", ""), "short");
  EXPECT_GT(d.find("memory")->get_double("copy_one_core_gb_s", 0), 0);
}

TEST(LauncherDoctor, TheDefaultDataIsSaidToBeReadWholeAndASyntheticPhotoIsDecoded) {
  if (fashion_mnist_dir().empty()) GTEST_SKIP() << "no Fashion-MNIST";
  TempDir ws;
  const Result r = doctor(ws, {});
  ASSERT_EQ(r.code, 0) << show(r);
  EXPECT_TRUE(contains(r.out, "JPEG files decoded  ")) << r.out;
  EXPECT_TRUE(contains(r.out, "a synthetic 1024x768 photo (quality 90)")) << r.out;
  EXPECT_TRUE(contains(r.out, "idx data is read whole when training starts")) << r.out;
  EXPECT_TRUE(contains(r.out, "one local rank: nothing to exchange (--full measures two)"));
  // Nothing is written: no run directory, no cache.
  EXPECT_FALSE(std::filesystem::exists(ws / "runs"));
  EXPECT_FALSE(std::filesystem::exists(ws / ".dl"));
}

TEST(LauncherDoctor, FullMeasuresAnAllreduceBetweenTwoGlooRanks) {
  TempDir ws;
  write_synthetic_idx(ws / "mnist", 64, 16);
  const JsonValue d = doctor_json(ws, {"--full", "--data", "mnist"});
  EXPECT_EQ(d.get_string("mode", ""), "full");
  const JsonValue* e = d.find("exchange");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->get_string("backend", ""), "gloo");
  EXPECT_EQ(e->get_i64("ranks", 0), 2);
  EXPECT_EQ(e->get_u64("bytes", 0), 256ull << 20);
  EXPECT_GT(e->get_double("busbw_gb_s", 0), 0);
  EXPECT_NEAR(e->get_double("busbw_gb_s", 0), e->get_double("algbw_gb_s", 0), 1e-6)
      << "two ranks: bus bandwidth is 2(n-1)/n = 1 times the algorithm's";
}

TEST(LauncherDoctor, TheGpusClocksAndALinkBelowItsWidthAreShown) {
  TempDir ws;
  write_synthetic_idx(ws / "mnist", 64, 16);
  const EnvVars gpu = {{"FAKE_NVML_GPUS", "NVIDIA A100-SXM4-80GB,8,0,81920,80000"},
                       {"FAKE_NVML_LINK", "3,8,4,16"},
                       {"FAKE_NVML_CLOCKS", "1095,1410,1593,1593"}};
  const JsonValue d = doctor_json(ws, {"--data", "mnist"}, gpu);
  const JsonValue* gpus = d.find("gpus");
  ASSERT_NE(gpus, nullptr);
  ASSERT_EQ(gpus->items().size(), 1u);
  const JsonValue& g = gpus->items()[0];
  EXPECT_EQ(g.get_string("name", ""), "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(g.get_i64("sm_clock_mhz", 0), 1095);
  EXPECT_EQ(g.get_i64("max_sm_clock_mhz", 0), 1410);
  EXPECT_EQ(g.get_i64("pcie_gen", 0), 3);
  EXPECT_EQ(g.get_i64("pcie_width", 0), 8);
  // PCIe 4.0 x16: 16 GT/s x 16 lanes x 128/130 / 8 bits.
  EXPECT_NEAR(g.get_double("pcie_limit_gb_s", 0), 31.5, 0.1);
  std::string findings;
  for (const JsonValue& f : d.find("findings")->items())
    findings += f.as_string().value_or("") + "\n";
  EXPECT_TRUE(contains(findings, "cuda:0's PCIe link runs x8 of its x16")) << findings;
  // A full link is no finding; the table names the clocks.
  const Result r =
      doctor(ws, {"--data", "mnist"}, {gpu[0], {"FAKE_NVML_LINK", "4,16,4,16"}, gpu[2]});
  ASSERT_EQ(r.code, 0) << show(r);
  EXPECT_FALSE(contains(r.out, "PCIe link runs")) << r.out;
  EXPECT_TRUE(contains(r.out, "1095 MHz")) << r.out;
}

TEST(LauncherDoctor, UnreadableFilesAreAFindingAndDataThatDoesNotOpenEndsAsARunWould) {
  if (kMakeJpegSet.empty()) GTEST_SKIP() << "no make_jpeg_set: this build has no OpenCV";
  TempDir ws;
  Process make({kMakeJpegSet, "--out", ws / "photos", "--per-class", "6", "--sides", "64-96"});
  ASSERT_EQ(make.wait(kTimeout).code, 0);
  // One class's files unreadable by whoever runs dl-train (as root: the workspace's owner).
  if (geteuid() == 0) {
    ASSERT_EQ(chown(ws.path().c_str(), 65534, 65534), 0);
  }
  std::vector<std::filesystem::path> classes;
  for (const auto& c : std::filesystem::directory_iterator(ws / "photos/train")) {
    classes.push_back(c.path());
  }
  ASSERT_GE(classes.size(), 2u);
  std::sort(classes.begin(), classes.end());
  for (const auto& f : std::filesystem::directory_iterator(classes[0])) {
    std::filesystem::permissions(f.path(), std::filesystem::perms::none);
  }
  const JsonValue d = doctor_json(ws, {"--data", "photos/train"});
  const JsonValue* read = d.find("read");
  ASSERT_NE(read, nullptr);
  EXPECT_GE(read->get_i64("unreadable", 0), 1);
  EXPECT_TRUE(contains(read->get_string("unreadable_example", ""), "Permission denied"))
      << read->get_string("unreadable_example", "");
  std::string findings;
  for (const JsonValue& f : d.find("findings")->items()) findings += f.as_string().value_or("");
  EXPECT_TRUE(contains(findings, "files read could not be: a run skips them")) << findings;
  // A file where a data set is expected: the figures, the reason as a finding, and a run's code.
  const std::filesystem::path file = *std::filesystem::directory_iterator(classes[1]);
  const Result r = doctor(ws, {"--data", file.string()});
  EXPECT_EQ(r.code, 65) << show(r);
  EXPECT_TRUE(contains(r.out, "the data did not open: ")) << r.out;
  EXPECT_TRUE(contains(r.out, "memory copy, 1 core")) << r.out;
}

TEST(LauncherDoctor, BadInputIsOneLine) {
  TempDir ws;
  Result r = doctor(ws, {"--data", "nowhere"});
  EXPECT_EQ(r.code, 66) << show(r);
  EXPECT_TRUE(contains(r.err, "--data: data")) << r.err;
  EXPECT_EQ(count_of(r.err, "\n"), 1) << r.err;
  r = doctor(ws, {"--fulll"});
  EXPECT_EQ(r.code, 64) << show(r);
  EXPECT_EQ(count_of(r.err, "\n"), 1) << r.err;
  EXPECT_TRUE(contains(r.err, "did you mean --full?")) << r.err;
  r = doctor(ws, {"--jsn"});  // the launcher's own option keeps the launcher's suggestion
  EXPECT_EQ(r.code, 64) << show(r);
  EXPECT_TRUE(contains(r.err, "did you mean --json?")) << r.err;
  Process typo(in_directory(ws.path(), {kLaunch, "doctr"}));
  r = typo.wait(kTimeout);
  EXPECT_EQ(r.code, 64);
  EXPECT_TRUE(contains(r.err, "did you mean doctor?")) << r.err;
  r = doctor(ws, {"--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_TRUE(contains(r.out, "Usage: dl-launch doctor [--full]")) << r.out;
}

}  // namespace
}  // namespace dl::test
