// The launcher's side of the probe protocol without a Python: which programs are worth a
// handshake (program_kind), the result file's records (the handshake, the last result, lines
// that are not the protocol's), and the script cache's round trip, bounds and damaged files.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
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

TEST(ProgramKind, OnlyPythonProgramsThatNameTheModuleAreWorthAHandshake) {
  TempDir ws;
  write_file(ws / "plain.py", "import torch\n");
  EXPECT_FALSE(is_python_program({"/bin/true"}));
  EXPECT_TRUE(is_python_program({"/usr/bin/python3.11", "x"}));
  EXPECT_TRUE(is_python_program({"/usr/bin/env", "train.py"}));
  EXPECT_EQ(*cannot_speak_protocol({"/bin/true"}, ws.path()),
            "it is not a Python program; the protocol's module, dl_plan, is Python");
  EXPECT_EQ(*cannot_speak_protocol({"/usr/bin/python3", "plain.py"}, ws.path()),
            "no Python file of the command or of the workspace imports dl_plan");
  // -m and -c: the scan cannot look inside, so the handshake decides.
  EXPECT_FALSE(cannot_speak_protocol({"/usr/bin/python3", "-m", "mypkg.train"}, ws.path()));
  // A file of the workspace naming it, at any depth but under runs/, data/ or a hidden folder.
  for (const char* hidden : {"runs/a/t.py", "data/t.py", ".venv/t.py"}) {
    write_file(ws / hidden, "import dl_plan\n");
  }
  EXPECT_TRUE(cannot_speak_protocol({"/usr/bin/python3", "plain.py"}, ws.path()));
  write_file(ws / "lib/deep/helpers.py", "from dl_plan import loader\n");
  EXPECT_FALSE(cannot_speak_protocol({"/usr/bin/python3", "plain.py"}, ws.path()));
}

TEST(ProgramKind, TheScanFollowsNoLinkBelowTheWorkspace) {
  TempDir ws, elsewhere;
  write_file(elsewhere / "t.py", "import dl_plan\n");
  fs::create_directory_symlink(elsewhere.path(), ws / "linked");
  fs::create_symlink(elsewhere / "t.py", ws / "t.py");
  EXPECT_TRUE(cannot_speak_protocol({"/usr/bin/python3", "main.py"}, ws.path()));
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
