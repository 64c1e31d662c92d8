// The options registry: precedence defaults < config file < DL_* environment < command line, the
// source named in each reason, and one clear error per kind of bad input.
#include "launcher/options.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/files.h"
#include "support/temp_dir.h"

extern char** environ;

namespace dl::test {
namespace {

class OptionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The suite may itself run under dl-launch: start from an environment without DL_*.
    std::vector<std::string> names;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string entry = *e;
      if (entry.rfind("DL_", 0) == 0) names.push_back(entry.substr(0, entry.find('=')));
    }
    for (const auto& n : names) unsetenv(n.c_str());
  }
  void TearDown() override {
    for (const char* n : set_) unsetenv(n);
  }
  void env(const char* name, const char* value) {
    setenv(name, value, 1);
    set_.push_back(name);
  }
  void config(const std::string& text, const std::string& file = "dl.conf") {
    std::ofstream(dir_ + "/" + file) << text;
  }
  LaunchOptions parse(std::vector<std::string> args) {
    args.insert(args.begin(), {"dl-launch", "--workspace", dir_});
    std::vector<const char*> argv;
    for (const auto& a : args) argv.push_back(a.c_str());
    return parse_options(static_cast<int>(argv.size()), argv.data());
  }
  // Runs parse expecting a UserError; returns it.
  UserError parse_error(std::vector<std::string> args) {
    try {
      parse(std::move(args));
    } catch (const UserError& e) {
      return e;
    }
    ADD_FAILURE() << "expected a UserError";
    return UserError(0, "");
  }

  TempDir tmp_;
  std::string dir_ = tmp_.path();
  std::vector<const char*> set_;
};

TEST_F(OptionsTest, DefaultsWhenNothingIsGiven) {
  const LaunchOptions o = parse({});
  EXPECT_FALSE(o.request.workers);
  EXPECT_FALSE(o.request.threads);
  EXPECT_EQ(o.request.batch_size.value, 64);
  EXPECT_EQ(o.request.batch_size.source, "default");
  EXPECT_EQ(o.request.precision.value, "auto");
  EXPECT_EQ(o.request.device.value, "auto");
  EXPECT_FALSE(o.config_file);
  EXPECT_DOUBLE_EQ(o.grace_seconds, 30.0);
}

TEST_F(OptionsTest, CommandLineBeatsEnvironmentBeatsConfigBeatsDefault) {
  config("workers = 3\nbatch-size = 32\nprecision = bf16\n");
  env("DL_WORKERS", "4");
  env("DL_BATCH_SIZE", "48");

  LaunchOptions o = parse({"--workers", "5"});
  EXPECT_EQ(o.request.workers->value, 5);
  EXPECT_EQ(o.request.workers->source, "--workers");
  EXPECT_EQ(o.request.batch_size.value, 48);
  EXPECT_EQ(o.request.batch_size.source, "DL_BATCH_SIZE");
  EXPECT_EQ(o.request.precision.value, "bf16");
  EXPECT_EQ(o.request.precision.source, dir_ + "/dl.conf:3: precision");
  EXPECT_EQ(o.config_file.value_or(""), dir_ + "/dl.conf");

  o = parse({});
  EXPECT_EQ(o.request.workers->value, 4);
  EXPECT_EQ(o.request.workers->source, "DL_WORKERS");

  unsetenv("DL_WORKERS");
  o = parse({});
  EXPECT_EQ(o.request.workers->value, 3);
  EXPECT_EQ(o.request.workers->source, dir_ + "/dl.conf:1: workers");
}

TEST_F(OptionsTest, ExplicitConfigFileReplacesTheWorkspaceOne) {
  config("workers = 3\n");
  config("workers = 6\n", "other.conf");
  const LaunchOptions o = parse({"--config", dir_ + "/other.conf"});
  EXPECT_EQ(o.request.workers->value, 6);
}

TEST_F(OptionsTest, AutoMeansDerive) {
  env("DL_WORKERS", "auto");
  EXPECT_FALSE(parse({}).request.workers);
  EXPECT_FALSE(parse({"--threads", "auto"}).request.threads);
}

TEST_F(OptionsTest, GlobalBatchFromEveryFormAndMicroBatchBesideItRefused) {
  EXPECT_EQ(parse({"--global-batch", "256"}).request.global_batch->value, 256);
  EXPECT_EQ(parse({"--global-batch=256"}).request.global_batch->source, "--global-batch");
  env("DL_GLOBAL_BATCH", "128");
  EXPECT_EQ(parse({}).request.global_batch->source, "DL_GLOBAL_BATCH");
  const UserError both = parse_error({"--global-batch", "64", "--micro-batch", "8"});
  EXPECT_EQ(both.code(), exit_code::kUsage);
  EXPECT_NE(std::string(both.what()).find("--micro-batch 8 and --global-batch"), std::string::npos)
      << both.what();
  EXPECT_NE(std::string(both.what()).find("--batch-size 8"), std::string::npos) << both.what();
  config("micro-batch = 16\n");
  const UserError conf = parse_error({"--global-batch", "64"});
  EXPECT_NE(std::string(conf.what()).find("dl.conf:1: micro-batch 16"), std::string::npos)
      << conf.what();
}

TEST_F(OptionsTest, CommandAfterDoubleDash) {
  const LaunchOptions o = parse({"--workers", "2", "--", "python3", "train.py", "--workers", "9"});
  EXPECT_EQ(o.command, (std::vector<std::string>{"python3", "train.py", "--workers", "9"}));
  EXPECT_EQ(o.request.workers->value, 2);
}

TEST_F(OptionsTest, JsonImpliesDryRun) {
  const LaunchOptions o = parse({"--json"});
  EXPECT_TRUE(o.json);
  EXPECT_TRUE(o.dry_run);
}

TEST_F(OptionsTest, ValuesAreParsed) {
  const LaunchOptions o =
      parse({"--device", "cuda:1", "--precision", "fp16", "--samples", "500", "--input-shape",
             "3x32x32", "--grace-period", "2.5", "--name", "exp-1", "--threads", "3"});
  EXPECT_EQ(o.request.device.value, "cuda:1");
  EXPECT_EQ(o.request.precision.value, "fp16");
  EXPECT_EQ(o.request.samples->value, 500);
  EXPECT_EQ(o.request.sample_bytes.value, 3u * 32 * 32 * 4);
  EXPECT_DOUBLE_EQ(o.grace_seconds, 2.5);
  EXPECT_EQ(o.run_name, "exp-1");
  EXPECT_EQ(o.request.threads->value, 3);
}

struct BadInput {
  std::vector<std::string> args;
  int code;
  std::string mentions;
};

class OptionsBadInput : public OptionsTest, public ::testing::WithParamInterface<BadInput> {};

TEST_P(OptionsBadInput, OneClearErrorNamingTheOption) {
  const BadInput& b = GetParam();
  const UserError e = parse_error(b.args);
  EXPECT_EQ(e.code(), b.code);
  const std::string msg = e.what();
  EXPECT_NE(msg.find(b.mentions), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << "one line: " << msg;
}

INSTANTIATE_TEST_SUITE_P(
    Table, OptionsBadInput,
    ::testing::Values(
        BadInput{{"--wrokers", "2"}, exit_code::kUsage, "wrokers"},
        BadInput{{"--workers=-3"}, exit_code::kUsage, "--workers"},
        BadInput{{"--workers", "two"}, exit_code::kUsage, "'two'"},
        BadInput{{"--batch-size", "0"}, exit_code::kUsage, "--batch-size"},
        BadInput{{"--batch-size", "many"}, exit_code::kUsage, "--batch-size"},
        BadInput{{"--memory-budget", "6 gigs"}, exit_code::kUsage, "6GiB"},
        BadInput{{"--memory-budget", "0"}, exit_code::kUsage, "--memory-budget"},
        BadInput{{"--memory-margin", "0.95"}, exit_code::kUsage, "--memory-margin"},
        BadInput{{"--retune", "maybe"}, exit_code::kUsage, "--retune"},
        BadInput{{"--threads", "0"}, exit_code::kUsage, "from 1 to 4096"},
        BadInput{{"--precision", "fp17"}, exit_code::kUsage, "fp32, fp16 or bf16"},
        BadInput{{"--device", "gpu"}, exit_code::kUsage, "cuda:N"},
        BadInput{{"--device", "cuda:x"}, exit_code::kUsage, "--device"},
        BadInput{{"--input-shape", "3x0x4"}, exit_code::kUsage, "CxHxW"},
        BadInput{{"--grace-period", "-1"}, exit_code::kUsage, "--grace-period"},
        BadInput{{"--name", "../escape"}, exit_code::kUsage, "--name"},
        BadInput{{"--workers"}, exit_code::kUsage, "workers"},
        BadInput{{"--nproc-per-node", "0"}, exit_code::kUsage, "--nproc-per-node"},
        BadInput{{"--nproc-per-node", "many"}, exit_code::kUsage, "gpu or auto"},
        BadInput{{"--nnodes", "0"}, exit_code::kUsage, "--nnodes"},
        BadInput{{"--node-rank", "-1"}, exit_code::kUsage, "--node-rank"},
        BadInput{{"--nnodes", "2", "--node-rank", "2"}, exit_code::kUsage, "below --nnodes 2"},
        BadInput{{"--master-port", "70000"}, exit_code::kUsage, "--master-port"},
        BadInput{{"--master-addr", "a b"}, exit_code::kUsage, "--master-addr"},
        BadInput{{"--cpu-bind", "sockets"}, exit_code::kUsage, "--cpu-bind"},
        BadInput{{"--log-ranks", "1"}, exit_code::kUsage, "--log-ranks"},
        BadInput{{"--lr-scaling", "square"}, exit_code::kUsage, "linear or sqrt"},
        BadInput{{"--reference-batch", "0"}, exit_code::kUsage, "--reference-batch"},
        BadInput{{"--dist-backend", "mpi"}, exit_code::kUsage, "gloo or nccl"},
        BadInput{{"--dist-timeout", "0"}, exit_code::kUsage, "--dist-timeout"},
        BadInput{{"--rdzv-timeout", "x"}, exit_code::kUsage, "--rdzv-timeout"},
        // Checked here for dl-train and a script alike (a script would fail after starting).
        BadInput{{"--checkpoint-every", "5x"},
                 exit_code::kUsage,
                 "--checkpoint-every: expected 0 or a number of steps (500) or a time (30s, 10m, "
                 "2h), got '5x'"},
        BadInput{{"--checkpoint-every=1e9s"}, exit_code::kUsage, "--checkpoint-every"},
        BadInput{
            {"--config", "/nonexistent/dl.conf"}, exit_code::kMissing, "/nonexistent/dl.conf"}));

TEST_F(OptionsTest, RankOptionsFromEveryLayer) {
  config("nproc-per-node = 2\nmaster-port = 4000\n");
  env("DL_MASTER_ADDR", "10.0.0.9");
  const LaunchOptions o = parse({"--nnodes", "2", "--node-rank", "1", "--lr-scaling", "sqrt"});
  const RankRequest& q = o.request.ranks;
  EXPECT_EQ(q.nproc_per_node.value, "2");
  EXPECT_EQ(q.nproc_per_node.source, dir_ + "/dl.conf:1: nproc-per-node");
  ASSERT_TRUE(q.nnodes && q.node_rank && q.master_addr && q.master_port);
  EXPECT_EQ(q.nnodes->value, 2);
  EXPECT_EQ(q.node_rank->value, 1);
  EXPECT_EQ(q.master_addr->value, "10.0.0.9");
  EXPECT_EQ(q.master_addr->source, "DL_MASTER_ADDR");
  EXPECT_EQ(q.master_port->value, 4000);
  EXPECT_EQ(o.request.lr_scaling.value, "sqrt");
  // A training setting: handed on to dl-train, which applies it.
  bool forwarded = false;
  for (const auto& [k, v] : o.trainer_env) forwarded |= k == "DL_LR_SCALING" && v == "sqrt";
  EXPECT_TRUE(forwarded);
}

TEST_F(OptionsTest, ReferenceBatchFromEveryLayerAndHandedOn) {
  config("reference-batch = 128\n");
  LaunchOptions o = parse({});
  ASSERT_TRUE(o.request.reference_batch);
  EXPECT_EQ(o.request.reference_batch->value, 128);
  EXPECT_EQ(o.request.reference_batch->source, dir_ + "/dl.conf:1: reference-batch");
  env("DL_REFERENCE_BATCH", "96");
  EXPECT_EQ(parse({}).request.reference_batch->value, 96);
  o = parse({"--reference-batch=256"});
  EXPECT_EQ(o.request.reference_batch->value, 256);
  EXPECT_EQ(o.request.reference_batch->source, "--reference-batch");
  bool forwarded = false;
  for (const auto& [k, v] : o.trainer_env) forwarded |= k == "DL_REFERENCE_BATCH" && v == "256";
  EXPECT_TRUE(forwarded) << "dl-train applies the same rule";
}

TEST_F(OptionsTest, BadEnvironmentValueNamesTheVariable) {
  env("DL_WORKERS", "abc");
  const UserError e = parse_error({});
  EXPECT_EQ(e.code(), exit_code::kUsage);
  EXPECT_NE(std::string(e.what()).find("DL_WORKERS"), std::string::npos) << e.what();
}

TEST_F(OptionsTest, UnknownDlVariablesAreIgnored) {
  env("DL_RUN_DIR", "/somewhere");  // set by a parent launcher: not an option
  EXPECT_NO_THROW(parse({}));
}

TEST_F(OptionsTest, MalformedConfigNamesTheFile) {
  config("workers = 2\nthis is not valid\n");
  const UserError e = parse_error({});
  EXPECT_EQ(e.code(), exit_code::kBadConfig);
  EXPECT_NE(std::string(e.what()).find(dir_ + "/dl.conf"), std::string::npos) << e.what();
}

TEST_F(OptionsTest, UnknownConfigKeyIsAnError) {
  config("wrokers = 2\n");
  const UserError e = parse_error({});
  EXPECT_EQ(e.code(), exit_code::kBadConfig);
  EXPECT_NE(std::string(e.what()).find("wrokers"), std::string::npos) << e.what();
}

TEST_F(OptionsTest, BadValueInConfigNamesFileAndKey) {
  config("precision = fp17\n");
  const UserError e = parse_error({});
  EXPECT_EQ(e.code(), exit_code::kUsage);
  EXPECT_NE(std::string(e.what()).find("dl.conf:1: precision"), std::string::npos) << e.what();
}

TEST_F(OptionsTest, WorkspaceConfigCannotMoveTheWorkspace) {
  config("workspace = /elsewhere\n");
  EXPECT_EQ(parse_error({}).code(), exit_code::kBadConfig);
}

TEST_F(OptionsTest, ConfigFileThatIsADirectory) {
  EXPECT_EQ(parse_error({"--config", dir_}).code(), exit_code::kMissing);
}

TEST_F(OptionsTest, TrainingSettingsAreAcceptedAndHandedOn) {
  config("epochs = 3\nmodel = resnet18\n");  // the trainer's keys share the workspace's file
  const LaunchOptions o = parse({"--lr", "0.01", "--workers", "2"});
  EXPECT_EQ(o.trainer_env, (std::vector<std::pair<std::string, std::string>>{{"DL_LR", "0.01"}}));
}

TEST_F(OptionsTest, BatchSizeAutoLeavesTheChoiceToThePlan) {
  const LaunchOptions o = parse({"--batch-size", "auto"});
  EXPECT_EQ(o.request.batch_size.source, "default") << "auto is no number given";
  EXPECT_EQ(parse({"--batch-size", "48"}).request.batch_size.source, "--batch-size");
}

TEST_F(OptionsTest, BatchSearchSettings) {
  config("memory-budget = 2G\nmemory-margin = 0.2\n");
  LaunchOptions o = parse({});
  ASSERT_TRUE(o.request.memory_budget);
  EXPECT_EQ(o.request.memory_budget->value, 2ull << 30);
  EXPECT_NE(o.request.memory_budget->source.find("dl.conf"), std::string::npos);
  EXPECT_DOUBLE_EQ(o.request.memory_margin.value, 0.2);
  EXPECT_FALSE(o.retune);

  env("DL_MEMORY_BUDGET", "512MiB");
  o = parse({"--retune"});
  EXPECT_EQ(o.request.memory_budget->value, 512ull << 20);
  EXPECT_EQ(o.request.memory_budget->source, "DL_MEMORY_BUDGET");
  EXPECT_TRUE(o.retune);
  EXPECT_FALSE(parse({"--retune", "false"}).retune);
}

TEST_F(OptionsTest, CacheKeySettingsAreRead) {
  const LaunchOptions d = parse({});
  EXPECT_EQ(d.model, "cnn");
  EXPECT_EQ(d.data, "");
  const LaunchOptions o = parse({"--model", "resnet18", "--data", "data/cifar", "--image-size",
                                 "64", "--input-shape", "3x64x64"});
  EXPECT_EQ(o.model, "resnet18");
  // A relative path given on the command line is the caller's: made absolute before the program
  // starts in the workspace.
  EXPECT_EQ(o.data, current_directory() + "/data/cifar");
  EXPECT_EQ(o.image_size, "64");
  EXPECT_EQ(o.input_shape, "3x64x64");
}

struct SizeCase {
  const char* text;
  std::uint64_t bytes;
};

class MemorySize : public ::testing::TestWithParam<SizeCase> {};

TEST_P(MemorySize, Parses) {
  const auto c = GetParam();
  const auto bytes = parse_memory_size(c.text);
  ASSERT_TRUE(bytes) << c.text;
  EXPECT_EQ(*bytes, c.bytes) << c.text;
}

INSTANTIATE_TEST_SUITE_P(
    Table, MemorySize,
    ::testing::Values(SizeCase{"6GiB", 6ull << 30}, SizeCase{"512MiB", 512ull << 20},
                      SizeCase{"2G", 2ull << 30}, SizeCase{"2g", 2ull << 30},
                      SizeCase{"1048576", 1ull << 20}, SizeCase{"100B", 100},
                      SizeCase{"512 MiB", 512ull << 20}, SizeCase{"1.5GiB", 3ull << 29},
                      SizeCase{"64Ki", 64ull << 10}, SizeCase{"1T", 1ull << 40},
                      SizeCase{"2GB", 2000000000ull}, SizeCase{"300kb", 300000},
                      SizeCase{" 8 gib ", 8ull << 30}));

TEST(MemorySizeRejects, AnythingElse) {
  for (const char* bad : {"", "GiB", "abc", "6 gigs", "1.5", "0", "0GiB", "-1G", "1..5G", "2X",
                          "2GiBs", "1e3", "99999999999T"}) {
    EXPECT_FALSE(parse_memory_size(bad)) << "'" << bad << "'";
  }
}

TEST(EnvToOption, MapsSettingsOnly) {
  EXPECT_EQ(env_to_option("DL_BATCH_SIZE"), "batch-size");
  EXPECT_EQ(env_to_option("DL_WORKERS"), "workers");
  EXPECT_EQ(env_to_option("DL_GRACE_PERIOD"), "grace-period");
  EXPECT_EQ(env_to_option("DL_EPOCHS"), "epochs");
  EXPECT_EQ(env_to_option("DL_HELP"), "");  // not a setting
  EXPECT_EQ(env_to_option("DL_RUN_DIR"), "");
  EXPECT_EQ(env_to_option("DL_workers"), "");
  EXPECT_EQ(env_to_option("WORKERS"), "");
}

TEST(Usage, ListsEveryOptionAndTheExitCodes) {
  const std::string u = usage_text();
  for (const char* opt : {"--help", "--version", "--dry-run", "--json", "--workspace", "--config",
                          "--workers", "--threads", "--batch-size", "--precision", "--device",
                          "--grace-period", "Exit codes", "127"}) {
    EXPECT_NE(u.find(opt), std::string::npos) << opt;
  }
}

}  // namespace
}  // namespace dl::test
