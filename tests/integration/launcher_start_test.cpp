// What a start does before the program runs, as a user types it: every option form of every
// setting reaches the program (a table over the registry itself), relative paths are the caller's,
// a start refused on its input writes nothing, and nothing an earlier run saved is replaced.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/setting_rules.h"
#include "core/settings.h"
#include "support/build_paths.h"
#include "support/files.h"
#include "support/matchers.h"
#include "support/process.h"
#include "support/setting_samples.h"
#include "support/temp_dir.h"

namespace dl::test {
namespace {

const std::string kLaunch = dl::test::kLaunchBin;
const std::string kChild = dl::test::kTestChild;
const std::string kFakeNvml = dl::test::kFakeNvml;

bool exists(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0;
}

class LauncherStart : public ::testing::Test {
 protected:
  void SetUp() override {
    ws = real_path(home.path()) + "/ws";
    mkdir(ws.c_str(), 0755);
    data = real_path(home.path()) + "/data";
    mkdir(data.c_str(), 0755);
  }
  // dl-launch in `cwd` with the fake NVML (no GPU) and the child in place of a trainer.
  Result launch(const std::vector<std::string>& args, const EnvVars& env = {},
                const std::string& cwd = {}) {
    std::vector<std::string> argv = {kLaunch, "--nvml-library", kFakeNvml};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv, env, kSchedulerVars, cwd);
  }
  TempDir home;  // a user's home: the workspace and data below it
  TempDir scratch;
  std::string ws, data;
};

// --- Option forms: every setting, from the registry.

// A value each setting's rule accepts and dl-launch's own checks let through on a CPU machine
// with one node; for a flag, false (its bare form gives true). New settings get theirs from the
// rule (support/setting_samples.h); only those whose value must name something real are listed.
std::string form_value(const std::string& key, const std::string& ws, const std::string& data) {
  static const std::map<std::string, std::string> real = {{"name", "r1"},
                                                          {"input-shape", "1x28x28"},
                                                          {"memory-budget", "1GiB"},
                                                          {"nnodes", "1"},
                                                          {"node-rank", "0"},
                                                          {"master-addr", "127.0.0.1"},
                                                          {"master-port", "29517"},
                                                          {"nproc-per-node", "1"},
                                                          {"cpu-bind", "none"},
                                                          {"trainer", kChild},
                                                          {"nvml-library", kFakeNvml},
                                                          {"resume", "false"},
                                                          {"run-as-owner", "false"},
                                                          {"device", "cpu"},
                                                          {"dist-backend", "gloo"},
                                                          // --global-batch refuses pieces given
                                                          // beside it; 0 (whole batches) passes.
                                                          {"micro-batch", "0"}};
  if (key == "workspace") return ws;
  if (key == "data") return data;
  if (const auto it = real.find(key); it != real.end()) return it->second;
  return rule_sample(key);
}

// The settings the workspace's own dl.conf may not set (launcher/options.cpp): given with
// --config instead, which may.
bool host_setting(const std::string& key) {
  return key == "workspace" || key == "run-as-owner" || key == "nvml-library";
}

TEST_F(LauncherStart, EveryFormOfEverySettingReachesTheProgram) {
  std::vector<std::string> keys;
  for (const auto& o : settings::all().options()) keys.push_back(o->long_name());
  auto is_train = [](const std::string& k) {
    return settings::train().find_nothrow(k, false) != nullptr;
  };
  const std::string conf = scratch / "given.conf";
  enum class Form { kEquals, kSpace, kBare, kEnvironment, kConfigFile };
  const std::vector<std::pair<Form, std::string>> forms = {{Form::kEquals, "--x=v"},
                                                           {Form::kSpace, "--x v"},
                                                           {Form::kBare, "--x (flags)"},
                                                           {Form::kEnvironment, "DL_X=v"},
                                                           {Form::kConfigFile, "dl.conf x = v"}};
  int cells = 0;
  for (const auto& [form, form_name] : forms) {
    SCOPED_TRACE(form_name);
    std::vector<std::string> args;
    EnvVars env;
    std::string ws_conf, given_conf;
    std::map<std::string, std::string> expect_value, expect_source;
    std::map<std::string, int> line_of;
    for (const auto& k : keys) {
      const bool flag = settings::rule(k).kind == settings::Rule::Kind::kFlag;
      if (form == Form::kBare && !flag) continue;
      const std::string v = form == Form::kBare ? "true" : form_value(k, ws, data);
      expect_value[k] = v;
      switch (form) {
        case Form::kEquals:
          args.push_back("--" + k + "=" + v);
          expect_source[k] = "--" + k;
          break;
        case Form::kSpace:
          args.insert(args.end(), {"--" + k, v});
          expect_source[k] = "--" + k;
          break;
        case Form::kBare:
          args.push_back("--" + k);
          expect_source[k] = "--" + k;
          break;
        case Form::kEnvironment:
          env.emplace_back(settings::key_to_env(k), v);
          expect_source[k] = settings::key_to_env(k);
          break;
        case Form::kConfigFile: {
          std::string& text = host_setting(k) ? given_conf : ws_conf;
          const std::string file = host_setting(k) ? conf : ws + "/dl.conf";
          text += k + " = " + v + "\n";
          expect_source[k] =
              file + ":" + std::to_string(std::count(text.begin(), text.end(), '\n')) + ": " + k;
          break;
        }
      }
    }
    std::vector<std::string> base = {"--json"};
    if (form == Form::kBare) base.insert(base.end(), {"--workspace", ws, "--name", "r1"});
    if (form == Form::kConfigFile) {
      write_file(ws + "/dl.conf", ws_conf);
      write_file(conf, given_conf);
      // --config replaces the workspace's dl.conf: read both by giving the host settings
      // through it and the rest through the workspace's own file in a second run below.
    }
    base.insert(base.end(), args.begin(), args.end());
    if (form == Form::kConfigFile) {
      // The workspace's own dl.conf: every setting but the host ones.
      const Result own = launch({"--json", "--workspace", ws, "--", kChild, "exit", "0"}, {});
      ASSERT_EQ(own.code, 0) << show(own);
      const auto doc = parse_json(own.out);
      ASSERT_TRUE(doc && doc->find("settings")) << own.out;
      // And the host settings from a --config file.
      const Result host =
          run({kLaunch, "--json", "--config", conf, "--", kChild, "exit", "0"}, {}, kSchedulerVars);
      ASSERT_EQ(host.code, 0) << show(host);
      const auto host_doc = parse_json(host.out);
      ASSERT_TRUE(host_doc) << host.out;
      for (const auto& k : keys) {
        SCOPED_TRACE(k);
        const JsonValue* s = (host_setting(k) ? host_doc : doc)->find("settings")->find(k);
        ASSERT_NE(s, nullptr) << "not in --json's settings";
        EXPECT_EQ(s->get_string("value", "?"), expect_value[k]);
        EXPECT_EQ(s->get_string("source", "?"), expect_source[k]);
        ++cells;
      }
      unlink((ws + "/dl.conf").c_str());
      continue;
    }
    base.insert(base.end(), {"--", kChild, "exit", "0"});
    // The forms that give every setting give --nvml-library (the fake) too.
    if (form != Form::kBare) base.insert(base.begin(), kLaunch);
    // The bare form gives --resume, which a command's run resumes from its last.pt: one saved.
    const std::string last = ws + "/runs/r1/last.pt";
    if (form == Form::kBare) {
      mkdir((ws + "/runs").c_str(), 0755);
      mkdir((ws + "/runs/r1").c_str(), 0755);
      write_file(last, "saved");
    }
    const Result r = form == Form::kBare ? launch(base, env) : run(base, env, kSchedulerVars);
    unlink(last.c_str());  // the later forms start run r1 afresh
    ASSERT_EQ(r.code, 0) << show(r);
    const auto doc = parse_json(r.out);
    ASSERT_TRUE(doc) << r.out;
    const JsonValue* given = doc->find("settings");
    const JsonValue* program_env = doc->find("env");
    ASSERT_TRUE(given != nullptr && program_env != nullptr) << r.out;
    for (const auto& [k, v] : expect_value) {
      SCOPED_TRACE(k);
      const JsonValue* s = given->find(k);
      ASSERT_NE(s, nullptr) << "not in --json's settings";
      EXPECT_EQ(s->get_string("value", "?"), v);
      EXPECT_EQ(s->get_string("source", "?"), expect_source[k]);
      // A training setting from the command line travels to the program as its DL_* variable
      // (one from the environment is inherited).
      if (is_train(k) && form != Form::kEnvironment) {
        EXPECT_EQ(program_env->get_string(settings::key_to_env(k), "(not set)"), v);
      }
      ++cells;
    }
  }
  std::printf("option-form cells checked: %d (%zu settings)\n", cells, keys.size());
  EXPECT_GE(cells, 4 * static_cast<int>(keys.size()));
}

TEST_F(LauncherStart, BareResumeReachesTheProgramAndItsEnvironment) {
  mkdir((ws + "/runs").c_str(), 0755);
  mkdir((ws + "/runs/first").c_str(), 0755);
  write_file(ws + "/runs/first/last.pt", "saved");
  const std::string out = scratch / "env";
  const Result r = launch(
      {"--workspace", ws, "--name", "first", "--resume", "--overlap", "--", kChild, "env", out});
  ASSERT_EQ(r.code, 0) << show(r);
  const auto env = read_env_file(out);
  EXPECT_EQ(env.count("DL_RESUME") ? env.at("DL_RESUME") : "(not set)", "true");
  EXPECT_EQ(env.count("DL_OVERLAP") ? env.at("DL_OVERLAP") : "(not set)", "true");
  EXPECT_EQ(read_file(ws + "/runs/first/last.pt"), "saved");
}

// --- Relative paths are the caller's, whatever directory the program runs in.

TEST_F(LauncherStart, RelativeWorkspaceAndPathsAreResolvedAgainstTheCallersDirectory) {
  write_file(ws + "/dl.conf", "epochs = 3\n");
  const std::string out = scratch / "env";
  for (const bool from_env : {false, true}) {
    SCOPED_TRACE(from_env ? "DL_WORKSPACE=ws DL_DATA=data" : "--workspace ws --data data");
    const std::vector<std::string> options =
        from_env ? std::vector<std::string>{}
                 : std::vector<std::string>{"--workspace", "ws", "--data", "data"};
    const EnvVars env =
        from_env ? EnvVars{{"DL_WORKSPACE", "ws"}, {"DL_DATA", "./data/"}} : EnvVars{};
    std::vector<std::string> args = options;
    args.insert(args.end(), {"--name", from_env ? "e" : "c", "--", kChild, "env", out});
    const Result r = launch(args, env, home.path());
    ASSERT_EQ(r.code, 0) << show(r);
    const auto vars = read_env_file(out);
    EXPECT_EQ(vars.at("cwd"), ws);
    EXPECT_EQ(vars.at("DL_WORKSPACE"), ws);
    EXPECT_EQ(vars.at("DL_CONFIG"), ws + "/dl.conf");
    EXPECT_EQ(vars.at("DL_DATA"), data);
    EXPECT_THAT(r.out, HasSubstr("config     " + ws + "/dl.conf"));
  }
}

// --- A start refused on its input writes nothing.

TEST_F(LauncherStart, MissingDataIs66BeforeAnythingIsWrittenDryRunToo) {
  for (const bool dry : {true, false}) {
    std::vector<std::string> args = {"--workspace", "ws",   "--name",    "x",
                                     "--data",      "nope", "--trainer", kChild};
    if (dry) args.push_back("--dry-run");
    const Result r = launch(args, {}, home.path());
    EXPECT_EQ(r.code, 66) << show(r);
    EXPECT_THAT(r.err,
                HasSubstr("--data: data " + real_path(home.path()) + "/nope cannot be found"));
    EXPECT_EQ(list_dir(ws), std::vector<std::string>{}) << "the workspace was written";
  }
}

TEST_F(LauncherStart, ResumeWithoutALastCheckpointIs66AndWritesNothing) {
  const Result r = launch({"--workspace", ws, "--name", "never", "--resume", "--trainer", kChild});
  EXPECT_EQ(r.code, 66) << show(r);
  EXPECT_THAT(r.err, HasSubstr("--resume: " + ws + "/runs/never/last.pt does not exist"));
  EXPECT_EQ(list_dir(ws), std::vector<std::string>{});
  const Result env =
      launch({"--workspace", ws, "--name", "never", "--trainer", kChild}, {{"DL_RESUME", "true"}});
  EXPECT_EQ(env.code, 66) << show(env);
  EXPECT_EQ(list_dir(ws), std::vector<std::string>{});
}

// A command after -- resumes from the last.pt dl_plan's TrainingState saves: without one the
// start is refused as dl-train's is, before the program runs, in one line naming the file.
TEST_F(LauncherStart, ResumeOfACommandWithoutALastCheckpointIs66AndStartsNothing) {
  const std::string out = scratch / "env";
  for (const bool from_env : {false, true}) {
    SCOPED_TRACE(from_env ? "DL_RESUME=true" : "--resume");
    std::vector<std::string> args = {"--workspace", ws, "--name", "never"};
    if (!from_env) args.push_back("--resume");
    args.insert(args.end(), {"--", kChild, "env", out});
    const Result r = launch(args, from_env ? EnvVars{{"DL_RESUME", "true"}} : EnvVars{});
    EXPECT_EQ(r.code, 66) << show(r);
    const std::string line = "dl-launch error: --resume: " + ws +
                             "/runs/never/last.pt does not exist; expected the last checkpoint "
                             "of an earlier run under this --name (a script saves it with "
                             "dl_plan's TrainingState, docs/python.md)\n";
    EXPECT_EQ(r.err, line);
    EXPECT_FALSE(file_exists(out)) << "the program ran";
    EXPECT_EQ(list_dir(ws), std::vector<std::string>{}) << "the workspace was written";
  }
  // A run folder with other files but no last.pt (best.pt alone) is refused the same way.
  mkdir((ws + "/runs").c_str(), 0755);
  mkdir((ws + "/runs/best").c_str(), 0755);
  write_file(ws + "/runs/best/best.pt", "best");
  const Result best =
      launch({"--workspace", ws, "--name", "best", "--resume", "--", kChild, "env", out});
  EXPECT_EQ(best.code, 66) << show(best);
  EXPECT_THAT(best.err, HasSubstr("runs/best/last.pt does not exist"));
  EXPECT_FALSE(file_exists(out)) << "the program ran";
}

TEST_F(LauncherStart, AProgramThatRefusesItsInputLeavesNoRunDirectory) {
  const Result r = launch({"--workspace", ws, "--name", "bad", "--", kChild, "exit", "65"});
  EXPECT_EQ(r.code, 65) << show(r);
  EXPECT_FALSE(exists(ws + "/runs/bad")) << "plan.json, run.lock left behind";
  // Any other end keeps the run directory: a crash, a signal, success.
  const Result crash = launch({"--workspace", ws, "--name", "crash", "--", kChild, "exit", "1"});
  EXPECT_EQ(crash.code, 1);
  EXPECT_TRUE(exists(ws + "/runs/crash/plan.json"));
}

TEST_F(LauncherStart, ARefusedStartKeepsAnExistingRunDirectoryAndWhatItSaved) {
  mkdir((ws + "/runs").c_str(), 0755);
  mkdir((ws + "/runs/old").c_str(), 0755);
  write_file(ws + "/runs/old/last.pt", "saved");
  const Result r =
      launch({"--workspace", ws, "--name", "old", "--resume", "--", kChild, "exit", "65"});
  EXPECT_EQ(r.code, 65) << show(r);
  EXPECT_EQ(read_file(ws + "/runs/old/last.pt"), "saved");
}

// --- No silent overwrite.

TEST_F(LauncherStart, AFreshStartUnderANameWithCheckpointsIs78AndChangesNothing) {
  mkdir((ws + "/runs").c_str(), 0755);
  mkdir((ws + "/runs/first").c_str(), 0755);
  write_file(ws + "/runs/first/last.pt", "saved");
  write_file(ws + "/runs/first/best.pt", "best");
  const std::string out = scratch / "env";
  for (const bool dry : {false, true}) {
    std::vector<std::string> args = {"--workspace", ws, "--name", "first"};
    if (dry) args.push_back("--dry-run");
    args.insert(args.end(), {"--", kChild, "env", out});
    const Result r = launch(args);
    EXPECT_EQ(r.code, 78) << show(r);
    EXPECT_THAT(r.err, HasSubstr("run directory " + ws +
                                 "/runs/first already holds checkpoints (last.pt, best.pt)"));
    EXPECT_THAT(r.err, HasSubstr("--resume"));
    EXPECT_THAT(r.err, HasSubstr("new --name"));
    EXPECT_FALSE(file_exists(out)) << "the program ran";
    EXPECT_EQ(list_dir(ws + "/runs/first"), (std::vector<std::string>{"best.pt", "last.pt"}));
  }
  // --overwrite (or DL_OVERWRITE) starts over, and says so to the program.
  const Result over =
      launch({"--workspace", ws, "--name", "first", "--overwrite", "--", kChild, "env", out});
  ASSERT_EQ(over.code, 0) << show(over);
  EXPECT_EQ(read_env_file(out).at("DL_OVERWRITE"), "true");
}

// --- What the plan says about the run.

// --resume of dl-train plans what dl-train will do with the run's last.json: its global batch
// (split over this start's ranks in pieces of the batch size) and its learning rate, not the
// rate --lr-scaling would give at this start's batch. A stale note changes nothing.
TEST_F(LauncherStart, AResumedRunIsPlannedWithItsRecipeFromLastJson) {
  mkdir((ws + "/runs").c_str(), 0755);
  mkdir((ws + "/runs/lin").c_str(), 0755);
  write_file(ws + "/runs/lin/last.pt", std::string(1000, 'x'));
  const std::string note = R"({"step": 12, "epochs_done": 1, "last_pt_bytes": 1000, )"
                           R"("global_batch": 96, "lr": 0.001, "base_lr": 0.004})";
  write_file(ws + "/runs/lin/last.json", note);
  const std::vector<std::string> args = {"--workspace", ws,
                                         "--name",      "lin",
                                         "--resume",    "--trainer",
                                         kChild,        "--samples",
                                         "1000",        "--batch-size",
                                         "24",          "--lr-scaling",
                                         "linear",      "--reference-batch",
                                         "16",          "--dry-run"};
  const Result r = launch(args);
  ASSERT_EQ(r.code, 0) << show(r);
  EXPECT_THAT(r.out, HasSubstr("  lr         0.004     (kept from --resume: runs/lin/last.json"));
  EXPECT_THAT(r.out, HasSubstr("--global-batch 96 (from --resume: runs/lin/last.json)"));
  EXPECT_THAT(r.out, HasSubstr("in 4 micro-batches of at most 24"));
  // Another --lr: the rate is this start's, by the rule (0.002 x 96/16).
  std::vector<std::string> other = args;
  other.insert(other.end(), {"--lr", "0.002"});
  EXPECT_THAT(launch(other).out, HasSubstr("  lr         0.012 "));
  // A note that no longer describes last.pt: the plan is this start's.
  write_file(ws + "/runs/lin/last.pt", "changed");
  const Result stale = launch(args);
  ASSERT_EQ(stale.code, 0) << show(stale);
  EXPECT_THAT(stale.out, Not(HasSubstr("last.json")));
  EXPECT_THAT(stale.out, HasSubstr("  lr         0.0015 "));
}

TEST_F(LauncherStart, ThePlanPromisesAReportOnlyForDlTrain) {
  const Result r = launch({"--workspace", ws, "--name", "p", "--", kChild, "exit", "0"});
  ASSERT_EQ(r.code, 0) << show(r);
  EXPECT_THAT(r.out, Not(HasSubstr("report.html")));
}

TEST_F(LauncherStart, InitsNextLinesNamePython3) {
  const Result r = run({kLaunch, "init", "fresh"}, {{"DL_TEMPLATE_DIR", dl::test::kTemplateSource}},
                       kSchedulerVars, home.path());
  ASSERT_EQ(r.code, 0) << show(r);
  EXPECT_THAT(r.out, HasSubstr("-- python3 python/train.py"));
  EXPECT_THAT(r.out, Not(HasSubstr("-- python python/")));
}

}  // namespace
}  // namespace dl::test
