// Probes as the launcher starts them, against stand-in trainers (shell scripts): the JSON line read
// from stdout among other output, the environment and working directory they get, and each way a
// probe can go wrong: bad input (the launcher stops with dl-train's code and message), a crash, a
// timeout, a non-zero exit, no report.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "core/errors.h"
#include "launcher/batch_probe.h"
#include "support/temp_dir.h"

namespace dl::test {
namespace {

namespace fs = std::filesystem;

class FakeTrainer : public ::testing::Test {
 protected:
  TempDir tmp_;
  const std::string dir_ = fs::canonical(tmp_.path()).string();

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

}  // namespace
}  // namespace dl::test
