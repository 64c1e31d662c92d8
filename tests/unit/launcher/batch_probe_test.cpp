// Probes as the launcher starts them, against stand-in trainers (shell scripts): the JSON line read
// from stdout among other output, the environment and working directory they get, and each way a
// probe can go wrong: bad input (the launcher stops with dl-train's code and message), a crash, a
// timeout, a non-zero exit, no report. Also the JSON reader underneath.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "core/errors.h"
#include "core/json.h"
#include "launcher/batch_probe.h"

namespace dl::test {
namespace {

namespace fs = std::filesystem;

class FakeTrainer : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dl-batch-probe-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = fs::canonical(tmpl).string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A trainer whose body is `script` (sh), started the way the launcher starts probes.
  ProbeSetup trainer(const std::string& script) {
    const std::string path = dir_ + "/dl-train";
    std::ofstream(path) << "#!/bin/sh\n" << script << "\n";
    chmod(path.c_str(), 0755);
    ProbeSetup s;
    s.trainer = {path};
    s.workspace = dir_;
    // DL_BATCH_SIZE=auto (the launcher's setting) must not reach the trainer: each probe gets
    // its own batch there.
    s.env = {{"DL_DEVICE", "cpu"}, {"FAKE_PEAK_PER_SAMPLE", "1000"}, {"DL_BATCH_SIZE", "auto"}};
    s.timeout_seconds = 30;
    return s;
  }

  std::string dir_;
};

TEST_F(FakeTrainer, ReadsTheJsonLineWithTheProbesEnvironmentAndWorkspace) {
  const ProbeSetup s = trainer(
      "[ \"$1\" = --probe-batch ] || exit 3\n"
      "[ \"$DL_BATCH_SIZE\" = \"$2\" ] || exit 5\n"
      "[ \"$(pwd -P)\" = \"" +
      dir_ +
      "\" ] || exit 4\n"
      "echo 'LibTorch says hello'\n"
      "echo '[12:00:00] info data: 60000 samples' >&2\n"
      "echo \"{\\\"batch\\\":$2,\\\"fits\\\":true,\\\"out_of_memory\\\":false,"
      "\\\"peak_bytes\\\":$(( $2 * FAKE_PEAK_PER_SAMPLE )),\\\"step_seconds\\\":0.25,"
      "\\\"device\\\":\\\"$DL_DEVICE\\\",\\\"precision\\\":\\\"fp32\\\",\\\"error\\\":\\\"\\\"}\"");
  const ProbeResult r = run_batch_probe(s, 48);
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.batch, 48);
  EXPECT_FALSE(r.out_of_memory);
  EXPECT_EQ(r.peak_bytes, 48000u);
  EXPECT_DOUBLE_EQ(r.step_seconds, 0.25);
}

TEST_F(FakeTrainer, OutOfMemoryIsReported) {
  const ProbeSetup s = trainer(
      "echo '{\"batch\":4096,\"fits\":false,\"out_of_memory\":true,\"peak_bytes\":0,"
      "\"step_seconds\":0,\"device\":\"cuda:0\",\"precision\":\"bf16\",\"error\":\"\"}'");
  const ProbeResult r = run_batch_probe(s, 4096);
  EXPECT_TRUE(r.out_of_memory);
  EXPECT_EQ(r.error, "");
}

TEST_F(FakeTrainer, BadInputStopsTheLauncherWithTheTrainersCodeAndMessage) {
  const ProbeSetup s = trainer(
      "echo '[12:00:00] error data /ws/data: no data set found; expected ...' >&2\nexit 66");
  try {
    run_batch_probe(s, 8);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.code(), exit_code::kMissing);
    const std::string m = e.what();
    EXPECT_NE(m.find("batch-size search"), std::string::npos) << m;
    EXPECT_NE(m.find("--probe-batch 8 failed: data /ws/data: no data set found"), std::string::npos)
        << m;
    EXPECT_EQ(m.find("[12:00:00]"), std::string::npos) << "the log prefix is dropped: " << m;
  }
}

TEST_F(FakeTrainer, CrashIsAnErrorTrial) {
  const ProbeResult r = run_batch_probe(trainer("kill -SEGV $$"), 8);
  EXPECT_NE(r.error.find("killed by signal 11"), std::string::npos) << r.error;
  EXPECT_FALSE(r.out_of_memory);
}

TEST_F(FakeTrainer, KilledBySigkillHintsAtTheOomKiller) {
  const ProbeResult r = run_batch_probe(trainer("kill -KILL $$"), 8);
  EXPECT_NE(r.error.find("out-of-memory killer"), std::string::npos) << r.error;
}

TEST_F(FakeTrainer, TimeoutIsAnErrorTrial) {
  ProbeSetup s = trainer("exec sleep 30");
  s.timeout_seconds = 0.3;
  const auto start = std::chrono::steady_clock::now();
  const ProbeResult r = run_batch_probe(s, 8);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_NE(r.error.find("stopped after 0.3 s"), std::string::npos) << r.error;
}

TEST_F(FakeTrainer, InternalErrorIsAnErrorTrial) {
  const ProbeResult r =
      run_batch_probe(trainer("echo '[12:00:00] critical internal error: boom' >&2\nexit 70"), 8);
  EXPECT_EQ(r.error, "exit code 70: internal error: boom");
}

TEST_F(FakeTrainer, NoReportIsAnErrorTrial) {
  const ProbeResult r = run_batch_probe(trainer("echo training...\nexit 0"), 8);
  EXPECT_EQ(r.error, "the probe printed no JSON report");
}

TEST_F(FakeTrainer, TorchVersionFromVersionOutput) {
  EXPECT_EQ(trainer_torch_version(trainer("echo 'dl-train 0.1.0 (LibTorch 1.13.0)'")), "1.13.0");
  EXPECT_EQ(trainer_torch_version(trainer("echo 'dl-train 0.0.9'")), "unknown");
  EXPECT_EQ(trainer_torch_version(trainer("exit 64")), "unknown");
}

TEST(ParseProbeOutput, LastJsonObjectLineWins) {
  const ProbeResult r = parse_probe_output(
      "{\"batch\":8,\"peak_bytes\":1}\nnoise\n"
      "{\"batch\":8,\"fits\":true,\"out_of_memory\":false,\"peak_bytes\":18446744073709551615,"
      "\"step_seconds\":1e-3,\"error\":\"\"}\n\n",
      8);
  EXPECT_EQ(r.peak_bytes, 18446744073709551615ull) << "byte counts beyond 2^53 stay exact";
  EXPECT_DOUBLE_EQ(r.step_seconds, 0.001);
  EXPECT_EQ(r.error, "");
}

TEST(ParseProbeOutput, ErrorAndMissingPeak) {
  EXPECT_EQ(parse_probe_output("{\"error\":\"no kernel for Half\"}", 8).error,
            "no kernel for Half");
  EXPECT_EQ(parse_probe_output("{\"out_of_memory\":false}", 8).error,
            "the probe reported no peak memory");
  EXPECT_EQ(parse_probe_output("{broken", 8).error, "the probe printed no JSON report");
}

TEST(JsonReader, Values) {
  std::string error;
  const auto v = parse_json(
      R"( {"a": [1, -2.5e2, true, false, null], "s": "x\"y\\z\n\u00e9\ud83d\ude00", "o": {}} )",
      &error);
  ASSERT_TRUE(v) << error;
  const JsonValue* a = v->find("a");
  ASSERT_TRUE(a && a->is_array());
  ASSERT_EQ(a->items().size(), 5u);
  EXPECT_EQ(a->items()[0].as_i64(), 1);
  EXPECT_DOUBLE_EQ(*a->items()[1].as_double(), -250.0);
  EXPECT_FALSE(a->items()[1].as_i64()) << "not a whole number";
  EXPECT_EQ(a->items()[2].as_bool(), true);
  EXPECT_EQ(a->items()[4].type(), JsonValue::Type::kNull);
  EXPECT_EQ(v->get_string("s", ""), "x\"y\\z\n\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_TRUE(v->find("o")->is_object());
  EXPECT_EQ(v->get_i64("missing", 7), 7);
  EXPECT_EQ(v->get_i64("s", 7), 7) << "mistyped falls back";
}

TEST(JsonReader, RejectsMalformedDocuments) {
  for (const char* bad : {"", "{", "[1,]", "{\"a\" 1}", "{\"a\":1} x", "\"\\q\"", "tru", "-",
                          "\"unterminated", "{\"a\":\"\x01\"}"}) {
    std::string error;
    EXPECT_FALSE(parse_json(bad, &error)) << bad;
    EXPECT_FALSE(error.empty()) << bad;
  }
  EXPECT_FALSE(parse_json(std::string(100, '[') + std::string(100, ']'))) << "too deep";
}

}  // namespace
}  // namespace dl::test
