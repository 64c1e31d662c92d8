// The launcher's side of the probe protocol without a Python: which programs are worth a
// handshake (program_kind), the result file's records (the handshake, the last result, lines
// that are not the protocol's), and the script cache's round trip, bounds and damaged files.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/dir_fd.h"
#include "launcher/program_kind.h"
#include "launcher/script_cache.h"
#include "launcher/script_probe.h"
#include "support/files.h"
#include "support/temp_dir.h"

namespace dl::test {
namespace {

namespace fs = std::filesystem;

TEST(ProgramKind, TheScriptIsTheWordAfterPythonsOptionsOrTheirModuleOrCode) {
  using K = CommandScript::Kind;
  const auto is = [](const std::vector<std::string>& c, K kind, const std::string& text) {
    const CommandScript s = command_script(c);
    EXPECT_EQ(s.kind, kind) << c.back();
    EXPECT_EQ(s.text, text) << c.back();
  };
  is({"/usr/bin/python3", "train.py", "--epochs", "2"}, K::kFile, "train.py");
  is({"/usr/bin/python3", "-u", "-X", "dev", "-W", "ignore", "src/t.py"}, K::kFile, "src/t.py");
  is({"/usr/bin/python3", "-uB", "-Wignore", "t.py"}, K::kFile, "t.py");
  is({"/usr/bin/python3", "-m", "pkg.train", "x.py"}, K::kModule, "pkg.train");
  is({"/usr/bin/python3", "-mpkg"}, K::kModule, "pkg");
  is({"/usr/bin/python3", "-c", "import dl_plan"}, K::kCode, "import dl_plan");
  is({"/usr/bin/env", "OMP_NUM_THREADS=1", "python3", "t.py"}, K::kFile, "t.py");
  is({"/ws/train.py", "--x"}, K::kFile, "/ws/train.py");
  is({"/usr/bin/torchrun", "--nproc-per-node", "2", "train.py"}, K::kFile, "train.py");
  is({"/usr/bin/torchrun", "--standalone", "-m", "pkg.train"}, K::kModule, "pkg.train");
  is({"/usr/bin/python3"}, K::kNone, "");
  is({"/usr/bin/python3", "-"}, K::kNone, "");
  is({"/bin/echo", "hi"}, K::kNone, "");
}

TEST(ProgramKind, AnImportIsAStatementNotAMention) {
  EXPECT_TRUE(imports_dl_plan("import torch\nimport dl_plan\n"));
  EXPECT_TRUE(imports_dl_plan("import os, dl_plan as dp"));
  EXPECT_TRUE(imports_dl_plan("def main():\n    from dl_plan import step, loader\n"));
  EXPECT_TRUE(imports_dl_plan("from dl_plan.probe import PROBE"));
  EXPECT_FALSE(imports_dl_plan("import dl_loader\n"));
  EXPECT_FALSE(imports_dl_plan("# import dl_plan\nimport torch"));
  EXPECT_FALSE(imports_dl_plan("print('import dl_plan')\n"));
  EXPECT_FALSE(imports_dl_plan("import my_dl_plan, dl_planner\n"));
  EXPECT_FALSE(imports_dl_plan("import torch  # dl_plan later\n"));
}

// --global-batch's warning to a program after --: silent where its script splits its batches
// with plan.micro_batches (the template's train.py does), whatever form the command takes.
TEST(ProgramKind, AScriptThatCallsMicroBatchesSplitsItsBatches) {
  EXPECT_TRUE(splits_micro_batches("for x, y in plan.micro_batches(images, labels, model=m):\n"));
  EXPECT_TRUE(splits_micro_batches("    pieces = p.micro_batches(x, y)  # accumulate\n"));
  EXPECT_FALSE(splits_micro_batches("# plan.micro_batches(x, y) one day\n"));
  EXPECT_FALSE(splits_micro_batches("loss.backward()  # no plan.micro_batches( here\n"));
  EXPECT_FALSE(splits_micro_batches("micro_batches = 4\n"));
  TempDir ws;
  write_file(ws / "split.py", "import dl_plan\nfor x, y in plan.micro_batches(a, b):\n  pass\n");
  write_file(ws / "whole.py", "import dl_plan\nloss.backward()\n");
  const std::string py = "/usr/bin/python3";
  EXPECT_TRUE(splits_micro_batches(*command_source({py, "split.py"}, ws.path())));
  EXPECT_FALSE(splits_micro_batches(*command_source({py, "-u", "whole.py"}, ws.path())));
  EXPECT_TRUE(splits_micro_batches(*command_source({py, "-c", "plan.micro_batches(x)"}, ".")));
  EXPECT_FALSE(command_source({py, "missing.py"}, ws.path()).has_value());
  EXPECT_FALSE(command_source({"/bin/true"}, ws.path()).has_value());
}

TEST(ProgramKind, OnlyTheCommandsOwnScriptOptsIn) {
  TempDir ws;
  write_file(ws / "plain.py", "import torch\n");
  write_file(ws / "fast.py", "import dl_loader\nloader = dl_loader.Loader('data', 64)\n");
  write_file(ws / "python/train.py", "import dl_plan\n");  // what `dl-launch init` makes
  write_file(ws / "pkg/run/__main__.py", "from dl_plan import step\n");
  const std::string py = "/usr/bin/python3";
  EXPECT_FALSE(is_python_program({"/bin/true"}));
  EXPECT_TRUE(is_python_program({"/usr/bin/python3.11", "x"}));
  EXPECT_TRUE(is_python_program({"/usr/bin/env", "train.py"}));
  EXPECT_EQ(*why_not_probed({"/bin/true"}, ws.path(), "auto"),
            "it is not a Python program; the protocol's module, dl_plan, is Python");
  // Another file of the workspace importing dl_plan does not make this one speak it.
  EXPECT_EQ(*why_not_probed({py, "plain.py"}, ws.path(), "auto"),
            "its script plain.py does not import dl_plan");
  EXPECT_EQ(*why_not_probed({py, "fast.py"}, ws.path(), "auto"),
            "its script fast.py does not import dl_plan");
  EXPECT_FALSE(why_not_probed({py, "python/train.py"}, ws.path(), "auto"));
  EXPECT_FALSE(why_not_probed({py, "-m", "pkg.run"}, ws.path(), "auto"));
  EXPECT_EQ(*why_not_probed({py, "-m", "elsewhere"}, ws.path(), "auto"),
            "its module elsewhere was not found in " + ws.path() +
                "; --probe-command always probes it all the same");
  EXPECT_EQ(*why_not_probed({py, "-c", "import torch"}, ws.path(), "auto"),
            "its code (-c) does not import dl_plan");
  EXPECT_FALSE(why_not_probed({py, "-c", "import dl_plan; dl_plan.setup()"}, ws.path(), "auto"));
  // The user's word wins either way.
  EXPECT_FALSE(why_not_probed({py, "plain.py"}, ws.path(), "always"));
  EXPECT_FALSE(why_not_probed({"/bin/true"}, ws.path(), "always"));
  EXPECT_EQ(*why_not_probed({py, "python/train.py"}, ws.path(), "never"),
            "--probe-command is never");
}

TEST(ProgramKind, AScriptPathIsTheWorkspacesAndALinkedScriptIsRead) {
  TempDir ws, elsewhere;
  write_file(elsewhere / "t.py", "import dl_plan\n");
  fs::create_symlink(elsewhere / "t.py", ws / "t.py");
  EXPECT_EQ(script_file({CommandScript::Kind::kFile, "t.py"}, ws.path()), ws / "t.py");
  EXPECT_FALSE(why_not_probed({"/usr/bin/python3", "t.py"}, ws.path(), "auto"));
  EXPECT_EQ(script_file({CommandScript::Kind::kFile, "missing.py"}, ws.path()), "");
  fs::create_directory(ws / "dir.py");
  EXPECT_EQ(script_file({CommandScript::Kind::kFile, "dir.py"}, ws.path()), "");
}

TEST(ProbeFailure, TheLastErrorLineIsTheProgramsOwnLastWord) {
  EXPECT_EQ(last_error_line("Traceback (most recent call last):\n  File \"t.py\", line 1\n"
                            "ModuleNotFoundError: No module named 'torch'\n\n",
                            "epoch 1\n"),
            "ModuleNotFoundError: No module named 'torch'");
  EXPECT_EQ(last_error_line("", "starting\nfailed: no data\n"), "failed: no data");
  EXPECT_EQ(last_error_line("", ""), "");
  EXPECT_EQ(last_error_line(std::string(400, 'x'), "").size(), 300U);
}

TEST(ProbeFailure, OnlyTheNewestLogsAreKept) {
  TempDir dir;
  for (int i = 10; i < 20; ++i) {
    write_file(dir / ("202612041500" + std::to_string(i) + "-7-step-64.log"), "x");
  }
  write_file(dir / "step-64.jsonl", "x");
  prune_probe_logs(dir.path(), std::nullopt, 4);
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(dir.path())) left.push_back(e.path().filename());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left,
            (std::vector<std::string>{
                "20261204150016-7-step-64.log", "20261204150017-7-step-64.log",
                "20261204150018-7-step-64.log", "20261204150019-7-step-64.log", "step-64.jsonl"}));
}

TEST(ProbeRecords, TheHandshakeTheLastResultAndWhatIsNotTheProtocols) {
  const std::string text =
      R"({"dl_probe": 1, "event": "hello", "probe": "step", "torch": "1.13.1"})"
      "\n"
      "garbage\n"
      R"({"dl_probe": 2, "event": "result"})"
      "\n"
      R"({"dl_probe": 1, "event": "result", "kind": "step", "batch": 8})"
      "\n"
      R"({"dl_probe": 1, "event": "result", "kind": "step", "batch": 16})"
      "\n";
  const ProbeRecords r = parse_probe_records(text);
  EXPECT_TRUE(r.hello);
  EXPECT_EQ(r.torch, "1.13.1");
  ASSERT_TRUE(r.result);
  EXPECT_NE(r.result->find("\"batch\": 16"), std::string::npos);
  EXPECT_EQ(r.malformed, 2);
  EXPECT_FALSE(parse_probe_records("").hello);
  EXPECT_FALSE(parse_probe_records(R"({"event": "hello"})").hello);  // no protocol version
}

TEST(ScriptCache, RoundTripOtherKeysKeptDamagedFileIsEmpty) {
  TempDir ws;
  const DirFd dir = DirFd::open(ws.path());
  ScriptProbeRecord speaks;
  speaks.speaks_protocol = true;
  speaks.workers_searched = true;
  speaks.workers.workers = 2;
  speaks.workers.reason = "measured: 0 -> 473, 1 -> 476, 2 -> 581 samples/s";
  speaks.workers.trials = {{0, 473, 100, ""}, {1, 476, 200, ""}, {2, 581, 300, ""}};
  speaks.seconds = 21;
  speaks.probed_at = "2026-12-02T02:48:28Z";
  ScriptProbeRecord silent;
  silent.no_handshake = "loader probe (0 workers): no handshake within 20 s";
  store_script_cache(dir, "a", speaks);
  store_script_cache(dir, "b", silent);
  const std::string path = script_cache_path(ws.path());
  const auto a = lookup_script_cache(path, "a");
  ASSERT_TRUE(a);
  EXPECT_TRUE(a->cached);
  EXPECT_EQ(a->workers.workers, 2);
  ASSERT_EQ(a->workers.trials.size(), 3u);
  EXPECT_EQ(a->workers.trials[2].host_bytes, 300u);
  EXPECT_EQ(a->workers.reason, speaks.workers.reason);
  const auto b = lookup_script_cache(path, "b");
  ASSERT_TRUE(b);
  EXPECT_FALSE(b->speaks_protocol);
  EXPECT_EQ(b->no_handshake, silent.no_handshake);
  EXPECT_FALSE(lookup_script_cache(path, "c"));
  for (int i = 0; i < 40; ++i) store_script_cache(dir, "k" + std::to_string(i), silent);
  EXPECT_EQ(parse_script_cache(read_file(path)).size(), 32u);
  write_file(path, "{not json");
  EXPECT_FALSE(lookup_script_cache(path, "k39"));
  // A worker count no machine has is not believed.
  write_file(path, render_script_cache({{"x", speaks}})
                       .replace(render_script_cache({{"x", speaks}}).find("\"workers\": 2"), 12,
                                "\"workers\": 99999"));
  EXPECT_FALSE(lookup_script_cache(path, "x"));
}

}  // namespace
}  // namespace dl::test
